import Foundation

/// The mobile network a group of phones is on (docs/network.md): round trip
/// and its jitter, packet loss, bandwidth each way, connection resets
/// (handovers), and offline windows (tunnels). Every byte a phone sends or
/// receives, HTTP and websocket alike, goes through its own `NetworkLink`
/// with these.
public struct NetworkConditions: Sendable, Equatable {
    /// When a phone has no network at all.
    public enum Offline: Sendable, Equatable {
        /// Every `every` seconds for `for` seconds, each phone at its own phase.
        case periodic(every: Double, for: Double)
        /// A seeded random process: gaps and windows drawn from exponential distributions with these means.
        case random(meanInterval: Double, meanDuration: Double)
    }

    /// The preset it came from (`lte`, `3g`, …), or `custom`.
    public var name: String
    /// Round trip, seconds; each direction takes half.
    public var rtt: Double
    /// Each direction's delay varies by up to ± this, seconds (uniform; never below zero, never reordering).
    public var jitter: Double
    /// The chance that a segment (1,460 bytes) is lost: TCP resends it after a retransmission timeout.
    public var loss: Double
    /// Bandwidth up and down, bits per second (0: not limited).
    public var up: Double
    public var down: Double
    /// Mean seconds between connection resets (a handover that drops the phone's connections); 0: none.
    public var resetEvery: Double
    public var offline: Offline?

    public init(name: String = "custom", rtt: Double = 0, jitter: Double = 0, loss: Double = 0, up: Double = 0, down: Double = 0,
                resetEvery: Double = 0, offline: Offline? = nil) {
        (self.name, self.rtt, self.jitter, self.loss, self.up, self.down) = (name, rtt, jitter, loss, up, down)
        (self.resetEvery, self.offline) = (resetEvery, offline)
    }

    /// The presets; their sources are in docs/network.md.
    public static let presets: [String: NetworkConditions] = [
        // Loadero's "4G": 50 Mbit/s up, 100 down, 45 ms, jitter 5–15 ms, 0.2 % loss.
        "lte": NetworkConditions(name: "lte", rtt: 0.045, jitter: 0.010, loss: 0.002, up: 50e6, down: 100e6),
        // Loadero's "3G": 1,200 kbit/s, 250 ms, jitter 50 ms, 0.5 % loss.
        "3g": NetworkConditions(name: "3g", rtt: 0.250, jitter: 0.050, loss: 0.005, up: 1.2e6, down: 1.2e6),
        // Loadero's "Edge": 260 kbit/s up, 200 down, 650 ms, jitter 100 ms, 1 % loss.
        "edge": NetworkConditions(name: "edge", rtt: 0.650, jitter: 0.100, loss: 0.01, up: 260e3, down: 200e3),
        // A home 802.11n link behind a broadband line (as the battery model's wifi profile): assumed.
        "wifi": NetworkConditions(name: "wifi", rtt: 0.020, jitter: 0.005, loss: 0.001, up: 10e6, down: 30e6),
        // LTE between stations, no network for 60 s every 5 minutes (a tunnel), a reset every 3 minutes on average
        // (cells changing under a moving train).
        "subway": NetworkConditions(name: "subway", rtt: 0.045, jitter: 0.010, loss: 0.002, up: 50e6, down: 100e6,
                                    resetEvery: 180, offline: .periodic(every: 300, for: 60)),
    ]

    /// The battery model's radio for a preset (edge has no RRC profile of its own: 3G's is the nearest).
    public static func radio(forPreset name: String) -> String? {
        ["lte": "lte", "3g": "3g", "edge": "3g", "wifi": "wifi", "subway": "lte"][name]
    }

    /// One line for logs and reports: `3g: rtt 250 ms ± 50, loss 0.5 %, up 1.2 Mbit/s, down 1.2 Mbit/s, offline 60 s every 5 min`.
    public var summary: String {
        var parts = ["rtt \(Self.ms(rtt))" + (jitter > 0 ? " ± \(Self.ms(jitter).dropLast(3))" : "")]
        if loss > 0 { parts.append("loss \(Self.number(loss * 100)) %") }
        if up > 0 { parts.append("up \(Self.rate(up))") }
        if down > 0 { parts.append("down \(Self.rate(down))") }
        if resetEvery > 0 { parts.append("a reset every \(Self.duration(resetEvery)) on average") }
        switch offline {
        case .periodic(let every, let length)?: parts.append("offline \(Self.duration(length)) every \(Self.duration(every))")
        case .random(let interval, let length)?:
            parts.append("offline about \(Self.duration(length)) about every \(Self.duration(interval)) (random)")
        case nil: break
        }
        return "\(name): " + parts.joined(separator: ", ")
    }

    static func ms(_ s: Double) -> String { "\(Self.number(s * 1000)) ms" }
    static func number(_ v: Double) -> String {
        v == v.rounded() ? String(Int(v)) : String(format: "%g", (v * 100).rounded() / 100)
    }
    static func rate(_ bps: Double) -> String {
        bps >= 1e6 ? "\(number(bps / 1e6)) Mbit/s" : "\(number(bps / 1e3)) kbit/s"
    }
    static func duration(_ s: Double) -> String {
        s >= 60 && s.truncatingRemainder(dividingBy: 60) == 0 ? "\(Int(s / 60)) min" : "\(number(s)) s"
    }
}
