/// What one probe did: checks tried, denied, leaked, findings; the evidence
/// for each leak and finding (secrets redacted); checks that could not decide.
public struct ProbeOutcome: Codable, Sendable {
    public enum Verdict: String, Codable, Sendable {
        /// Every check was denied (findings may still be reported).
        case denied
        case leaked
        /// Some check could not decide (e.g. a control saw nothing) and none leaked.
        case inconclusive
        /// Nothing could be tried (e.g. every step needed the service key).
        case skipped
    }

    public var id: String
    public var category: String
    public var description: String
    public var ifLeaked: String
    public var tried = 0
    public var denied = 0
    public var leaked = 0
    public var findings = 0
    /// Leaks and findings, with the request and response.
    public var evidence: [ProbeEvidence] = []
    /// Why a check was inconclusive or skipped.
    public var notes: [String] = []
    /// What the probe measured: a series' limit, a brute-force estimate, how two answers compared.
    public var measurements: [String] = []
    /// The specification's section the probe checks (`§2.11`).
    public var section: String?
    /// Whether a control of the probe held (false) or did not (true): after one that did not, what it judges cannot be
    /// denied, only leak; before any held (nil), a refusal is not "denied" either, unless the step is its own control.
    public var controlFailed: Bool?
    /// The state it ran in: a cast as set up that no probe had changed, or the cast as a probe before it left it (a
    /// hostile phone's one cast in a run, or `convoy probe --isolation shared`).
    public var state: String?

    /// Whether it changed its cast: an attack of its went through, or an action step of its wrote.
    public var changedState: Bool?

    public static let setUpCast = "a cast as set up, which no probe had changed"

    public var verdict: Verdict {
        if leaked > 0 { return .leaked }
        if tried == 0 { return .skipped }
        if denied + findings < tried || notes.contains(where: { $0.hasPrefix("inconclusive") }) { return .inconclusive }
        return .denied
    }

    public init(id: String, category: String, description: String, ifLeaked: String) {
        (self.id, self.category, self.description, self.ifLeaked) = (id, category, description, ifLeaked)
    }
}

/// One leak or finding: what was sent and what came back, redacted.
public struct ProbeEvidence: Codable, Sendable {
    public enum Kind: String, Codable, Sendable { case leak, finding }
    public var kind: Kind
    /// `file:line` of the step in the catalogue.
    public var step: String
    public var method: String
    public var path: String
    /// Request headers (Authorization and apikey shown by whose they are).
    public var headers: [String: String]
    /// The first 500 bytes of the request body.
    public var requestBody: String?
    public var status: Int
    /// The first 500 bytes of the response body.
    public var responseBody: String
    /// What was wrong, in words.
    public var detail: String
}

/// A catalogue's run against one target.
public struct ProbeReport: Codable, Sendable {
    public var catalogue: String
    public var target: String
    public var outcomes: [ProbeOutcome]

    public struct Totals: Codable, Sendable, Equatable {
        public var probes = 0, tried = 0, denied = 0, leaked = 0, findings = 0, inconclusive = 0, skipped = 0
    }

    public init(catalogue: String, target: String, outcomes: [ProbeOutcome]) {
        (self.catalogue, self.target, self.outcomes) = (catalogue, target, outcomes)
    }

    /// Per probe: tried means the probe ran; denied, leaked and so on are its verdict.
    public var totals: Totals {
        var t = Totals()
        for o in outcomes {
            t.probes += 1
            if o.tried > 0 { t.tried += 1 }
            switch o.verdict {
            case .denied: t.denied += 1
            case .leaked: t.leaked += 1
            case .inconclusive: t.inconclusive += 1
            case .skipped: t.skipped += 1
            }
            if o.findings > 0 { t.findings += 1 }
        }
        return t
    }

    /// Totals per category, in first-seen order.
    public var byCategory: [(category: String, totals: Totals)] {
        var order: [String] = []
        var groups: [String: [ProbeOutcome]] = [:]
        for o in outcomes {
            if groups[o.category] == nil { order.append(o.category) }
            groups[o.category, default: []].append(o)
        }
        return order.map { ($0, ProbeReport(catalogue: catalogue, target: target, outcomes: groups[$0]!).totals) }
    }

    /// Any leak fails the run.
    public var passed: Bool { !outcomes.contains { $0.verdict == .leaked } }
}
