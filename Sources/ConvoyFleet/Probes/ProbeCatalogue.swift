import Foundation

/// A catalogue of hostile-device probes, read from YAML (docs/probes.md):
/// what a hostile device tries, and what decides whether the backend denied
/// it, leaked, or showed a finding. Data, so users can probe their own schema.
public struct ProbeCatalogue: Sendable {
    public var name: String
    public var description: String
    /// Requests run once before the probes (e.g. each party creates its profile).
    public var setup: [ProbeRequest]
    public var probes: [Probe]
    /// The file it was read from, for reports.
    public var file: String
    /// How the cast is made: by the app's onboarding (the default), or by GoTrue's sign-up alone (`cast: gotrue`),
    /// for a project that has only the catalogue's own tables; its `setup` does the rest.
    public var cast: ProbeCast = .app
    /// The codes an attacker guesses (`{{guess}}`), for brute-force estimates.
    public var codeSpace: CodeSpace?

    public init(name: String, description: String = "", setup: [ProbeRequest] = [], probes: [Probe], file: String = "") {
        (self.name, self.description, self.setup, self.probes, self.file) = (name, description, setup, probes, file)
    }
}

/// One probe: an attack and how to judge it.
public struct Probe: Sendable {
    public var id: String
    /// `read_others`, `spoof_sender`, `key_substitution`, `friendships`, `tokens`,
    /// `payloads`, `replay`, `policy_finding`, or a catalogue's own.
    public var category: String
    public var description: String
    /// What it would mean for users if this leaked.
    public var ifLeaked: String
    public var steps: [ProbeStep]
    /// Where the specification says what this probe checks (e.g. `§2.11`), for reports.
    public var section: String? = nil

    /// The category whose probes must show, before judging, that the rightful reader gets what the attacker tries to read.
    public static let readCategory = "read_others"

    /// Whether the probe spends a limit: a series, a timing or a comparison counts against the backend's limits for its
    /// callers and their address, which no fresh account undoes.
    public var spendsALimit: Bool {
        steps.contains { step in
            switch step.action {
            case .timing, .series, .compare: true
            default: false
            }
        }
    }
}

/// A step and its verdict rules. A step with no rule is an action (its
/// result is not judged); rules are checked in the order expect, leak_if, finding_if.
public struct ProbeStep: Sendable {
    public enum Action: Sendable {
        case request(ProbeRequest)
        case realtime(RealtimeProbe)
        case replay(ReplayProbe)
        case channel(ChannelProbe)
        case timing(TimingProbe)
        case series(RepeatProbe)
        case compare(CompareProbe)
        /// Seconds to wait (on the runner's clock) before the next step: a code's TTL, a window.
        case wait(Double)
    }

    public var action: Action
    /// Denied only if every condition holds; otherwise leaked.
    public var expect: ProbeMatch?
    /// Leaked if every condition holds; otherwise denied.
    public var leakIf: ProbeMatch?
    /// A finding (a weakness the specification allows, not a policy failure) if every condition holds.
    public var findingIf: ProbeMatch?
    /// Where the step is in its file (`file:line`), for reports.
    public var source: String
    /// A control: checked first; if it does not hold the legitimate party could not do it, so the step
    /// is inconclusive (nothing was tested) and its other rules are not applied.
    public var requires: ProbeMatch? = nil
    /// Values kept from a 2xx response's first row for later steps of the probe: `{{saved.<name>}}` ← column.
    public var save: [(name: String, column: String)] = []

    public var isJudged: Bool { expect != nil || leakIf != nil || findingIf != nil }
    /// Whether the step shows the legitimate party can do what the probe tries: `requires`, or a subscription
    /// or channel step joined by its `control` first.
    public var isControl: Bool {
        switch action {
        case .realtime(let r): requires != nil || r.control != nil
        case .channel(let c): requires != nil || c.control != nil
        default: requires != nil
        }
    }
    /// Whether the step shows by itself that what it tries can be done: a series (its first attempts, before a limit),
    /// a timing or a comparison (its other side), or a replay (the friend's own post first).
    public var controlsItself: Bool {
        switch action {
        case .series, .timing, .compare, .replay: true
        default: false
        }
    }
    /// Whether the step is counted: judged, or a control.
    public var checks: Bool { isJudged || requires != nil }
}

/// Who sends a request: sets `apikey` and `Authorization` (overridable by `headers`).
public enum ProbeActor: String, Sendable, CaseIterable, Codable {
    /// The parties: their own access token, the anon key as apikey.
    case attacker, victim, friend, stranger
    /// The anon key alone (apikey and bearer), what any app binary contains.
    case anon
    /// The service_role key: verification only; steps as `service` are skipped when it is not known.
    case service
    /// No apikey, no Authorization.
    case none
}

/// An HTTP request template; strings may hold `{{placeholders}}`.
public struct ProbeRequest: Sendable {
    public var actor: ProbeActor
    public var method: String
    public var path: String
    /// In order.
    public var query: [(name: String, value: String)]
    public var headers: [(name: String, value: String)]
    public var body: ProbeBody?
    public var source: String
}

public enum ProbeBody: Sendable {
    /// A JSON value (from YAML), with placeholders in its strings.
    case json(JSONTemplate)
    /// Bytes sent as they are (after placeholders): malformed payloads.
    case raw(String)
}

/// A Realtime subscription made as `actor` with one `postgres_changes`
/// binding; `then` requests run once it is live. With `control`, that party
/// subscribes with the same binding and must see the change, or the probe is
/// inconclusive (nothing was sent that could have leaked).
public struct RealtimeProbe: Sendable {
    public var actor: ProbeActor
    /// A token to join with instead of the actor's own (e.g. `{{token.forged}}`).
    public var token: String?
    public var table: String
    public var event: String
    public var filter: String?
    public var control: ProbeActor?
    public var then: [ProbeRequest]
    /// Seconds to wait for changes after the last `then` request.
    public var wait: Double
}

/// A Realtime channel joined for broadcast and presence (Realtime Authorization when
/// `isPrivate`): as `actor` (or with `token`), after `control` joined it as the app does and
/// tracked its presence. Once joined the actor tracks `track` and sends `broadcast`; the control
/// sends a marker it must hear itself (or the step is inconclusive). Judged by `joined`,
/// `events` (broadcasts the actor heard), `presences` (others it saw present) and `delivered`
/// (its broadcasts the control heard).
public struct ChannelProbe: Sendable {
    public var actor: ProbeActor
    /// A token to join with instead of the actor's own.
    public var token: String?
    /// The channel's name, without `realtime:` (e.g. `op_{{victim.operation}}_locations`).
    public var topic: String
    public var isPrivate: Bool
    /// A broadcast the actor sends once joined: its event and payload (a JSON object).
    public var broadcast: (event: String, payload: JSONTemplate)?
    /// Presence the actor tracks once joined (a JSON object).
    public var track: JSONTemplate?
    public var control: ProbeActor?
    /// Seconds to wait for the control's marker and the actor's broadcast.
    public var wait: Double
}

/// Replay of a captured ciphertext (docs/probes.md): the friend posts two
/// updates to the victim; `actor` re-posts the first as `sender`; the server's
/// answer is judged by the step's rules, and the victim device's `ReplayCheck`
/// must reject the re-posted row (a leak if it accepts it).
public struct ReplayProbe: Sendable {
    public var actor: ProbeActor
    /// The sender_id of the re-post (default the actor's own id).
    public var sender: String
}

/// Two kinds of request timed against each other (docs/probes.md): `tries` rounds, each one request of `a`
/// then one of `b` (each list taken in turn), every round trip as libcurl measured it. Judged by the gap
/// between the two medians (`gap_ms`, `gap_percent` of the slower one) and by the last `b` answer's status.
public struct TimingProbe: Sendable {
    public var tries: Int
    public var a: [ProbeRequest]
    public var b: [ProbeRequest]
}

/// Conditions on what came back. All given conditions must hold.
public struct ProbeMatch: Sendable {
    /// Exact statuses or classes (`2xx`).
    public var status: [StatusPattern]?
    /// PostgREST/GoTrue error code.
    public var code: [String]?
    public var bodyContains: String?
    public var bodyLacks: String?
    /// Rows in a JSON array body (an object is one row).
    public var rows: Comparison?
    /// Realtime changes (or, on a channel, broadcasts) the actor received.
    public var events: Comparison?
    /// Whether the actor's channel join was accepted (channel steps).
    public var joined: Bool?
    /// The actor's broadcasts the control heard (channel steps).
    public var delivered: Comparison?
    /// Presence keys other than the actor's own that it saw (channel steps).
    public var presences: Comparison?
    /// The gap between the two sides' median round trips, milliseconds (timing steps).
    public var gapMs: Comparison?
    /// The same gap as a percentage of the slower median (timing steps).
    public var gapPercent: Comparison?
    /// The first attempt the limit refused, 1-based; does not hold when none was refused (repeat steps).
    public var limitedAt: Comparison?
    /// Whether any attempt was refused by the limit (repeat steps).
    public var limited: Bool?
    /// Attempts answered 2xx (repeat steps).
    public var successes: Comparison?
    /// Attempts answered 2xx after the first refusal (repeat steps).
    public var afterLimit: Comparison?
    /// Whether the attempt made `reset_after` the series went through (repeat steps).
    public var reset: Bool?
    /// Whether the two sides answered alike: status, body shape, message and, when timed, time (compare steps).
    public var alike: Bool?

    public enum StatusPattern: Sendable, Equatable {
        case exact(Int)
        case hundreds(Int)

        public func matches(_ status: Int) -> Bool {
            switch self {
            case .exact(let s): status == s
            case .hundreds(let h): status / 100 == h
            }
        }
    }

    /// `>0`, `>=1`, `0`, `==0`, `<3`.
    public struct Comparison: Sendable, Equatable {
        public enum Op: String, Sendable { case eq = "==", gt = ">", ge = ">=", lt = "<", le = "<=" }
        public var op: Op
        public var value: Int

        public func matches(_ n: Int) -> Bool {
            switch op {
            case .eq: n == value
            case .gt: n > value
            case .ge: n >= value
            case .lt: n < value
            case .le: n <= value
            }
        }

        public static func parse(_ text: String) -> Comparison? {
            let s = text.replacingOccurrences(of: " ", with: "")
            for op in [Op.ge, .le, .eq, .gt, .lt] where s.hasPrefix(op.rawValue) {
                return Int(s.dropFirst(op.rawValue.count)).flatMap { $0 >= 0 ? Comparison(op: op, value: $0) : nil }
            }
            return Int(s).flatMap { $0 >= 0 ? Comparison(op: .eq, value: $0) : nil }
        }
    }
}

extension ProbeRequest {
    /// Whether it may change what the backend holds: any method but GET and HEAD.
    var writes: Bool { !["GET", "HEAD"].contains(method.uppercased()) }
}
