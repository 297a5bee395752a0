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
    public struct Compact: Codable, Sendable, Equatable {
        public var map: FleetMapData

        public init(_ map: FleetMapData) { self.map = map }

        static let states: [FixState] = [.gps, .reduced, .noFix, .offline]
        static func code(_ s: FixState) -> Int { states.firstIndex(of: s)! }
        static func state(_ code: Int) -> FixState { states.indices.contains(code) ? states[code] : .gps }
        static func round(_ v: Double, _ scale: Double) -> Double { (v * scale).rounded() / scale }

        enum Keys: String, CodingKey { case v, groups, sampling, phones, tracked, i, g, track }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(2, forKey: .v)
            try c.encode(map.groups, forKey: .groups)
            try c.encode(map.sampling, forKey: .sampling)
            var phones = c.nestedUnkeyedContainer(forKey: .phones)
            for p in map.phones {
                var a = phones.nestedUnkeyedContainer()
                try a.encode(p.i)
                try a.encode(p.g)
                if let lat = p.lat, let lon = p.lon {
                    try a.encode(Self.round(lat, 1e5))
                    try a.encode(Self.round(lon, 1e5))
                } else {
                    try a.encodeNil()
                    try a.encodeNil()
                }
                try a.encode((p.online ? 1 : 0) + 2 * Self.code(p.state))
            }
            var tracked = c.nestedUnkeyedContainer(forKey: .tracked)
            for t in map.tracked {
                var o = tracked.nestedContainer(keyedBy: Keys.self)
                try o.encode(t.i, forKey: .i)
                try o.encode(t.g, forKey: .g)
                var track = o.nestedUnkeyedContainer(forKey: .track)
                for f in t.track {
                    var a = track.nestedUnkeyedContainer()
                    try a.encode(Self.round(f.t, 10))
                    try a.encode(Self.round(f.lat, 1e5))
                    try a.encode(Self.round(f.lon, 1e5))
                    try a.encode(Self.code(f.state))
                }
            }
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
