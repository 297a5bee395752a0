import Foundation

/// How a catalogue's cast is made (`cast:`).
public enum ProbeCast: String, Sendable, CaseIterable {
    /// The app's onboarding and pairing (its keys published, the friend befriending the attacker and the victim).
    case app
    /// GoTrue's sign-up only (the admin API when the service key is known): accounts and nothing else, for a
    /// schema of the catalogue's own; its `setup` makes profiles and relations.
    case gotrue
}

/// A repeated request (`repeat:`): `times` attempts, one after another as fast as the server answers or at
/// `rate` per second, each from the next of `callers` (one caller, or many to tell a per-caller limit from
/// a per-address one). Judged on the series: when the limit first refused (`limited_at`), successes,
/// successes after the limit (`after_limit`), and whether one more attempt `reset_after` went through.
public struct RepeatProbe: Sendable {
    public var times: Int
    /// One request, or several taken in turn.
    public var requests: [ProbeRequest]
    /// Who sends each attempt, in turn (nil: each request's own `as`).
    public var callers: [ProbeActor]?
    /// Attempts per second; nil: the next as soon as the last is answered.
    public var rate: Double?
    /// What a refusal by the limit looks like (default: status 429).
    public var limitedWhen: ProbeMatch
    /// Seconds to wait after the series before one more attempt, which must go through once the window has passed.
    public var resetAfter: Double?
    /// The window the specification gives the limit, for the brute-force estimate (with the catalogue's `code_space`).
    public var estimate: BruteForceAssumptions?
}

/// What a brute-force estimate assumes beyond what a series measures.
public struct BruteForceAssumptions: Sendable, Equatable {
    /// The limit's window, seconds.
    public var window: Double
    /// Whether the limit counts per caller (accounts multiply an attacker's guesses) or per address.
    public var perCaller: Bool
    /// Accounts an attacker holds.
    public var accounts: Int
    /// How long a code lives, seconds (the chance of guessing one before it expires).
    public var ttl: Double?

    public init(window: Double, perCaller: Bool, accounts: Int, ttl: Double?) {
        (self.window, self.perCaller, self.accounts, self.ttl) = (window, perCaller, accounts, ttl)
    }
}

/// The codes of a catalogue's app: `prefix` then `length` symbols of `alphabet`; `live` of them valid at once.
public struct CodeSpace: Sendable, Equatable {
    public var alphabet: [Character]
    public var length: Int
    public var prefix: String
    public var live: Int

    public init(alphabet: [Character], length: Int, prefix: String, live: Int) {
        (self.alphabet, self.length, self.prefix, self.live) = (alphabet, length, prefix, live)
    }

    /// How many codes there are.
    public var size: Double { pow(Double(alphabet.count), Double(length)) }

    /// A random code of the space.
    public func random() -> String {
        var g = SystemRandomNumberGenerator()
        return prefix + String((0..<length).map { _ in alphabet.randomElement(using: &g)! })
    }

    /// `31^8 = 852,891,037,441 (NC + 8 of 31 symbols)`.
    public var summary: String {
        "\(alphabet.count)^\(length) = \(BruteForceEstimate.count(size))" + (prefix.isEmpty ? "" : " (\(prefix) + \(length) of \(alphabet.count) symbols)")
    }
}

/// Two kinds of request that differ only in whether a thing exists (`compare:`): they must answer alike —
/// status, body shape, the message fields and, with `within`, time. Judged by `alike`.
public struct CompareProbe: Sendable {
    public var a: [ProbeRequest]
    public var b: [ProbeRequest]
    /// Rounds (each one `a` then one `b`); several when time is compared.
    public var tries: Int
    /// The time bound: each side's fastest answer may differ by this many milliseconds or this percentage of the slower one.
    public var within: (ms: Double, percent: Double)?
}
