/// Radio energy in joules, split by what it was spent on.
public struct RadioEnergy: Sendable, Equatable, Codable {
    /// Idle → connected (and 3G FACH → DCH).
    public var promotion: Double = 0
    /// On the air, at the transfer power (3G FACH small transfers at FACH power).
    public var transfer: Double = 0
    /// Connected with nothing to send, waiting for the inactivity timers.
    public var tail: Double = 0
    /// Idle (paging DRX, Wi-Fi beacons).
    public var idle: Double = 0
    /// Seconds spent idle (the rest of the time the radio was awake).
    public var idleSeconds: Double = 0

    public init() {}

    public var total: Double { promotion + transfer + tail + idle }
}

/// One phone's radio: the profile's RRC state machine driven by transfers at
/// injected times (seconds from any origin). O(1) memory, O(1) per event:
/// energy is added as each state is left, never from a list of past events.
public struct RadioModel: Sendable {
    public let profile: RadioProfile
    var machine: StateMachine
    /// Energy of states already left; `energy(until:)` adds the open one.
    public private(set) var closed = RadioEnergy()

    /// A radio idle since `start`.
    public init(profile: RadioProfile, start: Double = 0) {
        self.profile = profile
        machine = StateMachine(idleSince: start)
    }

    /// A transfer of `bytesUp` and `bytesDown` asked for at `time`: an HTTP
    /// request and its response, a Realtime message, a heartbeat and its reply.
    /// `lasting`: the exchange took this long from `time` (a round trip on a slow network); the radio stays
    /// connected, at its first tail stage's power, for what of it the bytes themselves do not take.
    public mutating func transfer(at time: Double, bytesUp: Int, bytesDown: Int, lasting: Double = 0) {
        machine.transfer(at: time, up: max(0, bytesUp), down: max(0, bytesDown), lasting: lasting, profile: profile, energy: &closed)
    }

    /// Everything spent up to `time`: the closed states, plus the open tail or idle up to `time`.
    public func energy(until time: Double) -> RadioEnergy {
        var energy = closed
        machine.close(at: time, profile: profile, energy: &energy)
        return energy
    }

    /// What the radio is doing at `time` (≥ the last transfer asked for), if nothing else is sent.
    public func phase(at time: Double) -> RadioPhase { machine.phase(at: time, profile: profile) }
}

/// A radio state as `RadioModel.phase(at:)` reports it.
public enum RadioPhase: Sendable, Equatable, CustomStringConvertible {
    case idle
    /// Promoting or transferring.
    case busy
    /// In the tail stage with this name (`connected`, `dch`, `fach`, …).
    case tail(String)

    public var description: String {
        switch self {
        case .idle: "idle"
        case .busy: "busy"
        case .tail(let name): name
        }
    }
}
