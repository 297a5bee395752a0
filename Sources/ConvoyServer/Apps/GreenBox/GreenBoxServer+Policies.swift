import GRDB

/// Green Box's row-level security on the SQLite store: its SQL's policies (`GreenBoxSQL/001_greenbox.sql`, PRD
/// §3.2, with `--strict-policies`' choice file), read once (`SQLPolicies`), and in Swift only what the SQL's
/// trigger does (`guard_friendship`: which columns a member may change).
extension GreenBoxServer {
    static func policies(strict: Bool) -> Policies { strict ? strictPolicies : prdPolicies }

    static let prdPolicies = SQLTables.policies(folder: folder, files: files + ["002_prd_policies.sql"], schema: schema, guards: guards)
    static let strictPolicies = SQLTables.policies(folder: folder, files: files + ["002_strict_policies.sql"], schema: schema, guards: guards)

    /// friendships: members and requester are fixed, only the invitee may activate, each member sets only their
    /// own preference (the SQL's trigger `guard_friendship`).
    static let guards: [String: Policies.Guard] = [
        "friendships": { old, new, uid in
            @Sendable func text(_ row: Policies.Row, _ c: String) -> String? { String.fromDatabaseValue(row[c] ?? .null) }
            for c in ["user_id_1", "user_id_2", "requested_by", "created_at"] where old[c] != new[c] {
                return "\(c) cannot be changed"
            }
            if text(old, "status") != "active", text(new, "status") == "active", text(old, "requested_by") == uid {
                return "only the invited member can accept a friendship"
            }
            let own = text(old, "user_id_1") == uid ? "preference_1" : "preference_2"
            let other = own == "preference_1" ? "preference_2" : "preference_1"
            if old[other] != new[other] { return "each member sets only their own sharing preference (\(own))" }
            return nil
        },
    ]
}
