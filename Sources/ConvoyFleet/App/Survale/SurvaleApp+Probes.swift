import ConvoyJSON
import ConvoyWire
import Synchronization

/// Survale's probe cast (docs/probes.md, "Survale"): operations, not friendships. The friend is
/// the case agent of operation A and the attacker a member of it; the victim is the case agent
/// of operation B, of another team and agency; the stranger is provisioned in a third agency and
/// is in no operation. A catalogue names them through `{{<role>.operation}}` and `{{<role>.callsign}}`.
extension SurvaleApp {
    /// The per-party placeholders a Survale cast fills.
    /// `dm_case_agent`: the party's pair channel with its operation's case agent (`op_{id}_dm_{a}_{b}`), for a
    /// member that is not the case agent.
    public static let probeFields = ["operation", "callsign", "dm_case_agent"]

    public func formProbeCast(_ cast: ProbeCastSessions, serviceKey: String?, via http: SupabaseHTTP) async throws(SupabaseError) {
        // Operation numbers apart from a fleet's (0…), so names say where a row came from.
        let number = 900_000 + Int.random(in: 0..<90_000) * 10
        try await formGroup([cast.friend, cast.attacker], joiningLater: [], number: number, serviceKey: serviceKey, via: http)
        try await formGroup([cast.victim], joiningLater: [], number: number + 1, serviceKey: serviceKey, via: http)
        guard let serviceKey else { return }
        let rest = SupabaseREST(http)
        let agency = try await Self.created(rest, "agencies", ["name": .string("Convoy agency \(number + 2)")], token: serviceKey)
        let team = try await Self.created(rest, "teams", ["name": .string("Team \(number + 2)"), "agency_id": .string(agency)], token: serviceKey)
        _ = try await rest.insertReturning("users", objects: [["id": .string(cast.stranger.userID), "team_id": .string(team), "agency_id": .string(agency),
                                                               "callsign": .string("S-\(number + 2)")]], token: serviceKey)
    }

    /// `<role>.operation` and `<role>.callsign` for each party set-up placed in an operation.
    public func probeValues(roles: [String: String]) -> [String: String] {
        var values: [String: String] = [:]
        for (role, userID) in roles {
            if let operation = operation(of: userID) { values["\(role).operation"] = operation }
            if let callsign = presence(for: userID)?["callsign"] { values["\(role).callsign"] = callsign }
            let agent = members.withLock { m in m.first { $0.value.operation == m[userID]?.operation && $0.value.caseAgent }?.key }
            if let operation = operation(of: userID), let agent, agent != userID {
                values["\(role).dm_case_agent"] = String(Self.directTopic(operation, userID, agent).dropFirst("realtime:".count))
            }
        }
        return values
    }
}
