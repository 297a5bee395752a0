@testable import ConvoyMetrics
import Foundation
import Testing

/// `/api/map`'s compact form (under 2/5 of the objects' bytes): arrays in place of objects, coordinates to 5 decimals, times to 0.1 s; read back, it is the
/// map as drawn (what each friend received left to `/api/phone/N`).
@Suite struct FleetMapCompactTests {
    static func map(_ phones: Int) -> FleetMapData {
        let states: [FleetMapData.FixState] = [.gps, .reduced, .noFix, .offline]
        let list = (0..<phones).map { (i: Int) -> FleetMapData.Phone in
            let placed = i % 7 != 0
            let lat: Double? = placed ? 46.0 + Double(i) * 0.000_123_456_7 : nil
            let lon: Double? = placed ? 14.5 - Double(i) * 0.000_098_765_4 : nil
            return FleetMapData.Phone(i: i, g: i % 3, lat: lat, lon: lon, online: i % 5 != 0, state: states[i % 4])
        }
        let tracked = (0..<3).map { (k: Int) -> FleetMapData.Tracked in
            let track = (0..<50).map { (n: Int) -> FleetMapData.Fix in
                FleetMapData.Fix(t: Double(n) * 1.03, lat: 46.012_345_67 + Double(n) * 1e-6, lon: 14.5, state: states[n % 4])
            }
            let receipt = FleetMapData.Receipt(t: 3, by: 1, lat: 46, lon: 14, acc: 12, latencyMs: 20, mode: "precise")
            return FleetMapData.Tracked(i: k * 10, g: k, track: track, received: [receipt])
        }
        return FleetMapData(groups: ["a", "b", "c"], phones: list, tracked: tracked, sampling: "every phone")
    }

    @Test func theCompactMapReadsBackAsDrawnAndIsAFractionOfTheFullOne() throws {
        let full = Self.map(3000)
        let compact = Data(FleetMapData.Compact(full).bytes())
        let plain = try JSONEncoder().encode(full)
        #expect(compact.count * 5 < plain.count * 2, "compact \(compact.count) bytes, objects \(plain.count)")
        let back = try JSONDecoder().decode(FleetMapData.Compact.self, from: compact).map
        #expect(back.groups == full.groups && back.sampling == full.sampling && back.phones.count == 3000)
        for (b, f) in zip(back.phones, full.phones) {
            #expect(b.i == f.i && b.g == f.g && b.online == f.online && b.state == f.state && (b.lat == nil) == (f.lat == nil))
            if let lat = f.lat, let lon = f.lon { #expect(abs(b.lat! - lat) <= 0.51e-5 && abs(b.lon! - lon) <= 0.51e-5 && b.lat != lat) }
        }
        #expect(back.tracked.map(\.i) == [0, 10, 20] && back.tracked.allSatisfy { $0.received.isEmpty && $0.track.count == 50 })
        for (b, f) in zip(back.tracked[1].track, full.tracked[1].track) {
            #expect(abs(b.t - f.t) <= 0.0501 && abs(b.lat - f.lat) <= 0.51e-5 && b.state == f.state)
        }
    }

    /// Names are escaped as JSON; a coordinate that is not a number is written as none.
    @Test func theTextIsJSONWhateverTheNames() throws {
        let odd = FleetMapData(groups: ["a \"quoted\" name", "back\\slash\n"], phones: [.init(i: 0, g: 1, lat: .nan, lon: 1, online: true, state: .gps)],
                               tracked: [], sampling: "é ✓")
        let back = try JSONDecoder().decode(FleetMapData.Compact.self, from: Data(FleetMapData.Compact(odd).bytes())).map
        #expect(back.groups == odd.groups && back.sampling == odd.sampling && back.phones.first?.lat == nil && back.phones.first?.online == true)
    }

    /// Each figure is written as its whole number of units with the point put in: read back, exactly the Double the
    /// rounding gives (negative, whole, tiny, and far from zero alike).
    @Test func eachFigureReadsBackAsTheRoundedDouble() throws {
        var rng = SystemRandomNumberGenerator()
        let fixed: [Double] = [0, -0.0, 46.051, -46.051, 12, -0.5, 0.000_004, -0.000_004, 0.000_005, 179.999_999, -89.999_995, 1e-9, 123_456.789, 9e14, 2e16]  // the last two past the map's range: written as Swift prints them
        let random = (0..<2000).map { _ in Double.random(in: -180...180, using: &rng) }
        for (v, places) in fixed.map({ ($0, 5) }) + fixed.map({ ($0, 1) }) + random.map({ ($0, 5) }) + random.map({ ($0 * 1000, 1) }) {
            var bytes: [UInt8] = []
            FleetMapData.Compact.write(v, places: places, &bytes)
            let text = String(decoding: bytes, as: UTF8.self)
            let expected = FleetMapData.Compact.round(v, [1.0, 10, 100, 1e3, 1e4, 1e5][places])
            #expect(Double(text) == expected, "\(v) at \(places): \(text)")
            if abs(v) < 1e9 { #expect(!text.hasSuffix(".") && !(text.contains(".") && text.hasSuffix("0")) && !text.contains("e"), "\(v): \(text)") }
        }
        for n in [0, 7, -7, 10, 1234567, Int.max, Int.min + 1] {
            var bytes: [UInt8] = []
            FleetMapData.Compact.write(n, &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(n))
        }
    }

    @Test func anotherShapeIsRefusedNotMisread() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(FleetMapData.Compact.self, from: Data(#"{"groups":[],"phones":[],"tracked":[],"sampling":""}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(FleetMapData.Compact.self, from: Data(#"{"v":2,"groups":[],"phones":[[1,0,"x",2,1]],"tracked":[],"sampling":""}"#.utf8)) }
    }
}
