import ConvoyMetrics

extension ProbeSummary {
    /// Outcomes (from one or many hostile devices) summed per probe, in catalogue
    /// order, with the first evidence of each, leaks first.
    public init(outcomes: [ProbeOutcome], catalogue: ProbeCatalogue, file: String, hostileDevices: Int) {
        self.init(catalogue: file, hostileDevices: hostileDevices, probes: [])
        add(outcomes, catalogue: catalogue)
    }

    /// Most evidence kept per probe.
    static let evidenceKept = 3

    /// Adds a pass's outcomes to the totals: counts summed, evidence kept up to
    /// three per probe, a leak displacing a finding. Probes stay in catalogue order.
    public mutating func add(_ outcomes: [ProbeOutcome], catalogue: ProbeCatalogue) {
        for o in outcomes {
            let i: Int
            if let found = probes.firstIndex(where: { $0.id == o.id }) {
                i = found
            } else {
                probes.append(.init(id: o.id, category: o.category, description: o.description, tried: 0, denied: 0, leaked: 0, findings: 0,
                                    errors: 0, evidence: []))
                i = probes.count - 1
            }
            if probes[i].section == nil { probes[i].section = o.section }
            if probes[i].state == nil { probes[i].state = o.state }
            if probes[i].measurements == nil, !o.measurements.isEmpty { probes[i].measurements = o.measurements }
            for note in o.notes where (probes[i].notes ?? []).count < 3 && !(probes[i].notes ?? []).contains(note) {
                probes[i].notes = (probes[i].notes ?? []) + [note]
            }
            probes[i].tried += o.tried
            probes[i].denied += o.denied
            probes[i].leaked += o.leaked
            probes[i].findings += o.findings
            if o.verdict == .inconclusive || o.verdict == .skipped { probes[i].errors += 1 }
            for e in o.evidence {
                let item = ProbeSummary.Evidence(kind: e.kind.rawValue,
                                                 request: "\(e.method) \(e.path)" + (e.headers["Authorization"].map { " (Authorization: \($0))" } ?? "")
                                                     + (e.requestBody.map { "\n\($0)" } ?? ""),
                                                 status: e.status, response: e.responseBody, note: e.detail)
                if probes[i].evidence.count < Self.evidenceKept {
                    probes[i].evidence.append(item)
                } else if e.kind == .leak, let finding = probes[i].evidence.firstIndex(where: { $0.kind != "leak" }) {
                    probes[i].evidence[finding] = item
                }
            }
        }
        let order = Dictionary(catalogue.probes.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { a, _ in a })
        probes.sort { (order[$0.id] ?? .max) < (order[$1.id] ?? .max) }
        for i in probes.indices { probes[i].evidence.sort { $0.kind == "leak" && $1.kind != "leak" } }
    }
}
