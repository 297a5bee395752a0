import Foundation

/// How long guessing a live code takes an attacker, from the code space a catalogue declares and the limit a
/// series measured (docs/probes.md, "Brute-force estimates"). Guesses are distinct, so finding one of `live`
/// codes among `size` takes (size + 1) / (live + 1) guesses on average.
public struct BruteForceEstimate: Sendable, Equatable {
    public var space: CodeSpace
    /// Guesses one account gets per second: the limit's allowance over its window, or the rate the series
    /// reached when nothing limited it.
    public var guessesPerSecond: Double
    /// Whether a limit was found (else `guessesPerSecond` is as fast as the server answered).
    public var limited: Bool
    /// Guesses one account gets per window, when limited.
    public var allowed: Int?
    public var assumptions: BruteForceAssumptions

    /// `allowed` attempts per window when the series was limited (the first refusal was attempt allowed + 1);
    /// nil when it never was, in which case `measuredRate` (attempts per second the series reached) is used.
    public init(space: CodeSpace, allowed: Int?, measuredRate: Double, assumptions: BruteForceAssumptions) {
        self.space = space
        self.assumptions = assumptions
        limited = allowed != nil
        self.allowed = allowed
        guessesPerSecond = allowed.map { Double($0) / assumptions.window } ?? measuredRate
    }

    public var expectedGuesses: Double { (space.size + 1) / Double(space.live + 1) }

    /// Seconds one account takes, on average.
    public var oneAccount: Double { guessesPerSecond > 0 ? expectedGuesses / guessesPerSecond : .infinity }

    /// Seconds `accounts` accounts take: a per-caller limit lets each guess; a per-address one does not.
    public var manyAccounts: Double { assumptions.perCaller ? oneAccount / Double(max(1, assumptions.accounts)) : oneAccount }

    /// The chance that all the accounts guess a live code before it expires.
    public var withinTTL: Double? {
        guard let ttl = assumptions.ttl else { return nil }
        let accounts = assumptions.perCaller ? Double(max(1, assumptions.accounts)) : 1
        // Limited: the allowance at the start of each window the code lives through (a 5-minute code under an
        // hourly limit still faces the whole allowance); else the rate reached, for the code's lifetime.
        let perAccount = allowed.map { Double($0) * (ttl / assumptions.window).rounded(.up) } ?? guessesPerSecond * ttl
        let guesses = perAccount * accounts
        return -expm1(guesses * log1p(-Double(space.live) / space.size))
    }

    /// In words, for reports.
    public var lines: [String] {
        var out = ["code space \(space.summary), \(space.live) live"]
        if limited {
            out.append("limit: \(Self.count(guessesPerSecond * assumptions.window)) guesses per \(Self.duration(assumptions.window)) per \(assumptions.perCaller ? "caller" : "address")")
        } else {
            out.append(String(format: "no limit found: %.1f guesses/s from one account", guessesPerSecond))
        }
        out.append("one attacker: expected \(Self.duration(oneAccount)) to guess a live code")
        let m = Self.count(Double(assumptions.accounts))
        out.append(assumptions.perCaller || !limited
            ? "\(m) accounts: \(Self.duration(manyAccounts))"
            : "\(m) accounts from one address: no faster (the limit is per address)")
        if let p = withinTTL, let ttl = assumptions.ttl {
            out.append(String(format: "chance to guess one within its %@ lifetime: %.3g", Self.duration(ttl), p))
        }
        return out
    }

    static func count(_ n: Double) -> String {
        guard n.isFinite else { return "∞" }
        if n < 1e15 {
            let f = NumberFormatter()
            f.numberStyle = .decimal
            f.maximumFractionDigits = 0
            return f.string(from: NSNumber(value: n.rounded())) ?? "\(n)"
        }
        return String(format: "%.3g", n)
    }

    /// `42 s`, `3.2 h`, `19 days`, `9.7 million years`.
    static func duration(_ s: Double) -> String {
        guard s.isFinite else { return "for ever" }
        let year = 365.25 * 86_400
        switch s {
        case ..<120: return String(format: "%.0f s", s)
        case ..<3600: return String(format: "%.0f min", s / 60)
        case ..<(3 * 86_400): return String(format: "%.3g h", s / 3600)
        case ..<year: return String(format: "%.0f days", s / 86_400)
        case ..<(1e6 * year): return "\(count(s / year)) years"
        case ..<(1e9 * year): return String(format: "%.1f million years", s / year / 1e6)
        default: return String(format: "%.3g years", s / year)
        }
    }
}
