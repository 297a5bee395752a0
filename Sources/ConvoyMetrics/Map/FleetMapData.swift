import Foundation

/// Where the fleet is and what each phone's friends saw of it: the live map's data (`/api/map`,
/// `/api/phone/N`) and report.html's (`map.json`). Every phone's newest true position; for a sample of
/// phones (`tracked`), their true tracks and what their friends received, fuzzed and noisy as it was sent.
public struct FleetMapData: Codable, Sendable, Equatable {
    public var groups: [String]
    public var phones: [Phone]
    public var tracked: [Tracked]
    /// How the tracked phones were chosen (for the page and the report to say).
    public var sampling: String

    public init(groups: [String], phones: [Phone], tracked: [Tracked], sampling: String) {
        (self.groups, self.phones, self.tracked, self.sampling) = (groups, phones, tracked, sampling)
    }

    /// Where a position came from, or why there is none.
    public enum FixState: String, Codable, Sendable {
        /// A GPS fix (with the group's noise).
        case gps
        /// A fix in a GPS-denied zone: Wi-Fi or cell, reduced accuracy.
        case reduced
        /// No fix at all (a dropout): the phone shared nothing at that tick.
        case noFix = "no_fix"
        /// In a tunnel or an offline window: the phone had no network.
        case offline
    }

    /// One phone now: its true position (nil before its first tick), group, whether online, its last fix's state.
    public struct Phone: Codable, Sendable, Equatable {
        public var i: Int
        public var g: Int
        public var lat: Double?
        public var lon: Double?
        public var online: Bool
        public var state: FixState

        public init(i: Int, g: Int, lat: Double?, lon: Double?, online: Bool, state: FixState) {
            (self.i, self.g, self.lat, self.lon, self.online, self.state) = (i, g, lat, lon, online, state)
        }
    }

    /// One point of a true track: wall time (Unix seconds), position, state.
    public struct Fix: Codable, Sendable, Equatable {
        public var t: Double
        public var lat: Double
        public var lon: Double
        public var state: FixState

        public init(t: Double, lat: Double, lon: Double, state: FixState) { (self.t, self.lat, self.lon, self.state) = (t, lat, lon, state) }
    }

    /// An update a friend received: when it was sent, by whom it was received, the position and accuracy it
    /// carried (fuzzed for that friend: `mode`), and its end-to-end latency.
    public struct Receipt: Codable, Sendable, Equatable {
        public var t: Double
        public var by: Int
        public var lat: Double
        public var lon: Double
        public var acc: Double
        public var latencyMs: Double?
        /// `precise`, `general:<decimals>` (rounded to a cell of 10^-decimals degrees) or `laplace:<ε per metre>`.
        public var mode: String

        public init(t: Double, by: Int, lat: Double, lon: Double, acc: Double, latencyMs: Double?, mode: String) {
            (self.t, self.by, self.lat, self.lon, self.acc, self.latencyMs, self.mode) = (t, by, lat, lon, acc, latencyMs, mode)
        }

        enum CodingKeys: String, CodingKey {
            case t, by, lat, lon, acc, mode, latencyMs = "latency_ms"
        }
    }

    public struct Tracked: Codable, Sendable, Equatable {
        public var i: Int
        public var g: Int
        public var track: [Fix]
        public var received: [Receipt]

        public init(i: Int, g: Int, track: [Fix], received: [Receipt]) { (self.i, self.g, self.track, self.received) = (i, g, track, received) }
    }

    /// One phone clicked on: where it is, and each friend with the last updates it received from this phone.
    public struct PhoneDetail: Codable, Sendable, Equatable {
        public var i: Int
        public var group: String
        public var lat: Double?
        public var lon: Double?
        public var online: Bool
        public var state: FixState
        public var friends: [Friend]
        /// Its true track, when it is one of the tracked phones.
        public var track: [Fix]?

        public struct Friend: Codable, Sendable, Equatable {
            public var i: Int
            public var mode: String?
            public var last: [Receipt]

            public init(i: Int, mode: String?, last: [Receipt]) { (self.i, self.mode, self.last) = (i, mode, last) }
        }

        public init(i: Int, group: String, lat: Double?, lon: Double?, online: Bool, state: FixState, friends: [Friend], track: [Fix]?) {
            (self.i, self.group, self.lat, self.lon, self.online, self.state, self.friends, self.track) = (i, group, lat, lon, online, state, friends, track)
        }
    }
}
