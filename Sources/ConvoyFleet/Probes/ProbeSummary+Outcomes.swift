import ConvoyMetrics

extension ProbeSummary {
    /// Outcomes (from one or many hostile devices) summed per probe, in catalogue
    /// order, with the first evidence of each, leaks first.
    public init(outcomes: [ProbeOutcome], catalogue: ProbeCatalogue, file: String, hostileDevices: Int) {
        let byID = Dictionary(grouping: outcomes, by: \.id)
        self.init(catalogue: file, hostileDevices: hostileDevices, probes: catalogue.probes.compactMap { probe in
            guard let runs = byID[probe.id] else { return nil }
            let evidence = runs.flatMap(\.evidence).sorted { $0.kind == .leak && $1.kind != .leak }.prefix(3).map { e in
                ProbeSummary.Evidence(kind: e.kind.rawValue, request: "\(e.method) \(e.path)" + (e.headers["Authorization"].map { " (Authorization: \($0))" } ?? "")
                                        + (e.requestBody.map { "\n\($0)" } ?? ""),
                                      status: e.status, response: e.responseBody, note: e.detail)
            }
            func sum(_ k: KeyPath<ProbeOutcome, Int>) -> Int { runs.reduce(0) { $0 + $1[keyPath: k] } }
            return .init(id: probe.id, category: probe.category, description: probe.description, tried: sum(\.tried), denied: sum(\.denied),
                         leaked: sum(\.leaked), findings: sum(\.findings),
                         errors: runs.filter { $0.verdict == .inconclusive || $0.verdict == .skipped }.count, evidence: Array(evidence))
        })
    }
}
