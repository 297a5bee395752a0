import Foundation

/// The live map as `/api/map` sends it, once a second to every page (and to `convoy dashboard` from each shard): arrays
/// in place of objects, coordinates rounded to 5 decimals (about a metre), times to a tenth of a second. map.json and
/// report.html keep every digit; a page draws at a few metres a pixel at best.
///
///     {"v": 2, "groups": [...], "sampling": "...",
///      "phones": [[i, g, lat, lon, flags], ...],          lat, lon null without a fix; flags: 1 online, + 2 × state
///      "tracked": [{"i": i, "g": g, "track": [[t, lat, lon, state], ...]}, ...]}
///
/// `state` is 0 gps, 1 reduced, 2 no fix, 3 offline. What each friend received is not in it: the page asks for one
/// phone's (`/api/phone/N`) when it is clicked.
extension FleetMapData {
    public struct Compact: Decodable, Sendable, Equatable {
        public var map: FleetMapData

        public init(_ map: FleetMapData) { self.map = map }

        static let states: [FixState] = [.gps, .reduced, .noFix, .offline]
        static func code(_ s: FixState) -> Int { states.firstIndex(of: s)! }
        static func state(_ code: Int) -> FixState { states.indices.contains(code) ? states[code] : .gps }
        static func round(_ v: Double, _ scale: Double) -> Double { (v * scale).rounded() / scale }

        enum Keys: String, CodingKey { case v, groups, sampling, phones, tracked, i, g, track }

        /// The JSON text, written by hand into bytes: it is made once a second for 3,000 phones and more, where
        /// JSONEncoder's nested containers, or Swift's own printing of a Double, cost several times as much. A rounded
        /// figure is written as its whole number of units (1e-5 degree, 0.1 s) with the point put in: the shortest text
        /// that reads back as the same Double the rounding gives.
        public func bytes() -> [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(96 + map.phones.count * 30 + map.tracked.reduce(0) { $0 + 40 * $1.track.count })
            out += Array("{\"v\":2,\"groups\":".utf8) + Self.json(map.groups) + Array(",\"sampling\":".utf8) + Self.json(map.sampling)
            out += Array(",\"phones\":[".utf8)
            for (k, p) in map.phones.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "["))
                Self.write(p.i, &out)
                out.append(UInt8(ascii: ","))
                Self.write(p.g, &out)
                out.append(UInt8(ascii: ","))
                if let lat = p.lat, let lon = p.lon, lat.isFinite, lon.isFinite {
                    Self.write(lat, places: 5, &out)
                    out.append(UInt8(ascii: ","))
                    Self.write(lon, places: 5, &out)
                } else {
                    out += Array("null,null".utf8)
                }
                out.append(UInt8(ascii: ","))
                Self.write((p.online ? 1 : 0) + 2 * Self.code(p.state), &out)
                out.append(UInt8(ascii: "]"))
            }
            out += Array("],\"tracked\":[".utf8)
            for (k, t) in map.tracked.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                out += Array("{\"i\":".utf8)
                Self.write(t.i, &out)
                out += Array(",\"g\":".utf8)
                Self.write(t.g, &out)
                out += Array(",\"track\":[".utf8)
                var first = true
                for f in t.track where f.t.isFinite && f.lat.isFinite && f.lon.isFinite {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    out.append(UInt8(ascii: "["))
                    Self.write(f.t, places: 1, &out)
                    out.append(UInt8(ascii: ","))
                    Self.write(f.lat, places: 5, &out)
                    out.append(UInt8(ascii: ","))
                    Self.write(f.lon, places: 5, &out)
                    out.append(UInt8(ascii: ","))
                    Self.write(Self.code(f.state), &out)
                    out.append(UInt8(ascii: "]"))
                }
                out += Array("]}".utf8)
            }
            out += Array("]}".utf8)
            return out
        }

        /// A whole number in decimal.
        static func write(_ n: Int, _ out: inout [UInt8]) {
            if n < 0 { out.append(UInt8(ascii: "-")) }
            var m = n.magnitude
            let start = out.count
            repeat {
                out.append(UInt8(ascii: "0") + UInt8(m % 10))
                m /= 10
            } while m > 0
            out[start...].reverse()
        }

        /// `v` rounded to `places` decimals (as `round(v, 10^places)`), without trailing zeros: `46.051`, `12`, `-0.5`.
        static func write(_ v: Double, places: Int, _ out: inout [UInt8]) {
            let unit = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000][places]
            let scaled = (v * Double(unit)).rounded()
            guard scaled.magnitude < 1e15 else {
                out += Array("\(Self.round(v, Double(unit)))".utf8)
                return
            }
            let units = Int(scaled)
            if units < 0 { out.append(UInt8(ascii: "-")) }
            write(Int(units.magnitude / unit.magnitude), &out)
            var (fraction, width) = (Int(units.magnitude % unit.magnitude), places)
            guard fraction > 0 else { return }
            while fraction % 10 == 0 { (fraction, width) = (fraction / 10, width - 1) }
            out.append(UInt8(ascii: "."))
            let start = out.count
            for _ in 0..<width {
                out.append(UInt8(ascii: "0") + UInt8(fraction % 10))
                fraction /= 10
            }
            out[start...].reverse()
        }

        /// A string or a list of strings as JSON (escaped as JSONEncoder escapes them).
        static func json(_ value: some Encodable) -> [UInt8] {
            (try? JSONEncoder().encode(value)).map(Array.init) ?? Array("null".utf8)
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            guard try c.decode(Int.self, forKey: .v) == 2 else {
                throw DecodingError.dataCorruptedError(forKey: .v, in: c, debugDescription: "not the compact map (v 2)")
            }
            var phones: [Phone] = []
            var list = try c.nestedUnkeyedContainer(forKey: .phones)
            while !list.isAtEnd {
                var a = try list.nestedUnkeyedContainer()
                let (i, g) = (try a.decode(Int.self), try a.decode(Int.self))
                let (lat, lon) = (try a.decodeNil() ? nil : try a.decode(Double.self), try a.decodeNil() ? nil : try a.decode(Double.self))
                let flags = try a.decode(Int.self)
                phones.append(Phone(i: i, g: g, lat: lat, lon: lon, online: flags & 1 == 1, state: Self.state(flags >> 1)))
            }
            var tracked: [Tracked] = []
            var tracks = try c.nestedUnkeyedContainer(forKey: .tracked)
            while !tracks.isAtEnd {
                let o = try tracks.nestedContainer(keyedBy: Keys.self)
                var fixes = try o.nestedUnkeyedContainer(forKey: .track)
                var track: [Fix] = []
                while !fixes.isAtEnd {
                    var a = try fixes.nestedUnkeyedContainer()
                    track.append(Fix(t: try a.decode(Double.self), lat: try a.decode(Double.self), lon: try a.decode(Double.self),
                                     state: Self.state(try a.decode(Int.self))))
                }
                tracked.append(Tracked(i: try o.decode(Int.self, forKey: .i), g: try o.decode(Int.self, forKey: .g), track: track, received: []))
            }
            map = FleetMapData(groups: try c.decode([String].self, forKey: .groups), phones: phones, tracked: tracked,
                               sampling: try c.decode(String.self, forKey: .sampling))
        }
    }
}
