/// What the hostile devices tried (summary.json's `probes`): per probe, how
/// often it was tried, denied, or leaked, and findings (allowed by the
/// policy but worth knowing). Evidence carries the request and the
/// response with every token redacted.
public struct ProbeSummary: Codable, Sendable, Equatable {
    /// The catalogue file(s) the probes came from.
    public var catalogue: String
    public var hostileDevices: Int
    public var probes: [Probe]

    public var leaks: Int { probes.reduce(0) { $0 + $1.leaked } }
    public var findings: Int { probes.reduce(0) { $0 + $1.findings } }
    public var tried: Int { probes.reduce(0) { $0 + $1.tried } }

    public struct Probe: Codable, Sendable, Equatable {
        public var id: String
        public var category: String
        public var description: String
        public var tried: Int
        public var denied: Int
        public var leaked: Int
        public var findings: Int
        /// Inconclusive tries (the request itself failed), neither denied nor leaked.
        public var errors: Int
        /// The first leaks and findings, as evidence.
        public var evidence: [Evidence]
        /// The specification's section the probe checks (`§2.11`).
        public var section: String?
        /// What it measured (a limit found, a brute-force estimate, two answers compared), from its first pass.
        public var measurements: [String]?
        /// Why checks were inconclusive or skipped (the first few), so a user can make them count.
        public var notes: [String]?
        /// The state it ran in (its first pass): a cast of its own set up as the catalogue declares, the set-up cast
        /// no probe had written through, or the cast as the probes before it left it.
        public var state: String?

        public init(id: String, category: String, description: String, tried: Int, denied: Int, leaked: Int, findings: Int, errors: Int,
                    evidence: [Evidence]) {
            (self.id, self.category, self.description) = (id, category, description)
            (self.tried, self.denied, self.leaked, self.findings, self.errors, self.evidence) = (tried, denied, leaked, findings, errors, evidence)
        }
    }

    public struct Evidence: Codable, Sendable, Equatable {
        /// `leak` or `finding`.
        public var kind: String
        /// What was sent, e.g. `GET /rest/v1/encrypted_locations?recipient_id=eq.… (Bearer <attacker token>)`.
        public var request: String
        public var status: Int
        /// The start of the response, redacted.
        public var response: String
        public var note: String

        public init(kind: String, request: String, status: Int, response: String, note: String) {
            (self.kind, self.request, self.status, self.response, self.note) = (kind, request, status, response, note)
        }
    }

    public init(catalogue: String, hostileDevices: Int, probes: [Probe]) {
        (self.catalogue, self.hostileDevices, self.probes) = (catalogue, hostileDevices, probes)
    }

    enum CodingKeys: String, CodingKey {
        case catalogue, probes
        case hostileDevices = "hostile_devices"
    }
}
