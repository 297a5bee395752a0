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

        /// The JSON text, written by hand: it is made once a second for 3,000 phones and more, where JSONEncoder's nested
        /// containers cost several times as much.
        public func bytes() -> [UInt8] {
            var out = "{\"v\":2,\"groups\":"
            out.reserveCapacity(64 + map.phones.count * 36 + map.tracked.reduce(0) { $0 + 36 * $1.track.count })
            out += Self.json(map.groups)
            out += ",\"sampling\":" + Self.json(map.sampling) + ",\"phones\":["
            for (k, p) in map.phones.enumerated() {
                if k > 0 { out += "," }
                out += "[\(p.i),\(p.g),"
                if let lat = p.lat, let lon = p.lon, lat.isFinite, lon.isFinite {
                    out += "\(Self.round(lat, 1e5)),\(Self.round(lon, 1e5)),"
                } else {
                    out += "null,null,"
                }
                out += "\((p.online ? 1 : 0) + 2 * Self.code(p.state))]"
            }
            out += "],\"tracked\":["
            for (k, t) in map.tracked.enumerated() {
                if k > 0 { out += "," }
                out += "{\"i\":\(t.i),\"g\":\(t.g),\"track\":["
                for (n, f) in t.track.enumerated() where f.t.isFinite && f.lat.isFinite && f.lon.isFinite {
                    if n > 0 { out += "," }
                    out += "[\(Self.round(f.t, 10)),\(Self.round(f.lat, 1e5)),\(Self.round(f.lon, 1e5)),\(Self.code(f.state))]"
                }
                out += "]}"
            }
            out += "]}"
            return Array(out.utf8)
        }

        /// A string or a list of strings as JSON (escaped as JSONEncoder escapes them).
        static func json(_ value: some Encodable) -> String {
            (try? JSONEncoder().encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
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
