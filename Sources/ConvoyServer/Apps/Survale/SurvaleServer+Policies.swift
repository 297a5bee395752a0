import Foundation
import GRDB

/// Survale's row-level security on the SQLite store (read from its SQL), and the helpers its Realtime
/// Authorization and Storage policy call in Swift (`is_operation_member` and the rest).
extension SurvaleServer {
    // MARK: Who the caller is to an operation (the SQL's SECURITY DEFINER helpers)

    /// `is_operation_member(<column>)`: was ever a member.
    static func memberSQL(_ column: String) -> String {
        "EXISTS (SELECT 1 FROM operation_members m WHERE m.operation_id = \(column) AND m.user_id = ?)"
    }

    static func isMember(_ op: String?, _ uid: String, _ db: Database) throws -> Bool {
        guard let op else { return false }
        return try Bool.fetchOne(db, sql: "SELECT \(memberSQL("?"))", arguments: [op, uid]) ?? false
    }

    /// `is_current_member(op, statuses)`: a member now (not left) of an operation in one of `statuses`.
    static func isCurrentMember(_ op: String?, _ uid: String, statuses: [String], _ db: Database) throws -> Bool {
        guard let op else { return false }
        let marks = statuses.map { _ in "?" }.joined(separator: ", ")
        return try Bool.fetchOne(db, sql: """
            SELECT EXISTS (SELECT 1 FROM operation_members m JOIN operations o ON o.id = m.operation_id
              WHERE m.operation_id = ? AND m.user_id = ? AND m.left_at IS NULL AND o.status IN (\(marks)))
            """, arguments: StatementArguments([op, uid] + statuses)) ?? false
    }

    /// `operation_of_topic(topic)`: the operation of `op_{uuid}_locations` or `op_{uuid}_chat`.
    static func operation(ofTopic topic: String) -> String? {
        for suffix in ["_locations", "_chat"] where topic.hasPrefix("op_") && topic.hasSuffix(suffix) {
            let id = String(topic.dropFirst(3).dropLast(suffix.count))
            if id.count == 36, id == id.lowercased(), UUID(uuidString: id) != nil { return id }
        }
        return nil
    }

    // MARK: Realtime Authorization

    /// survale_channels_read: `is_current_member(operation_of_topic(realtime.topic()), ARRAY['draft', 'active'])`;
    /// survale_channels_write: `extension IN ('broadcast', 'presence') AND is_current_member(…, ARRAY['active'])`.
    /// survale_direct_read / _write: a pair's channel, `op_{id}_dm_{a}_{b}` (`a` < `b`), is the two's alone, while both
    /// are current members of the active operation (`direct_channel_allows(topic)`); written with broadcasts only
    /// (`extension = 'broadcast'`): nobody tracks presence there.
    static func realtimeAllows(_ action: ChannelAction, _ ext: RealtimeExtension, topic: String, as who: Principal, in db: Database) throws -> Bool {
        guard who.role == .authenticated, let uid = who.userID else { return false }
        if let (operation, parties) = direct(ofTopic: topic) {
            guard parties.contains(uid), action == .read || ext == .broadcast else { return false }
            for party in parties where try !isCurrentMember(operation, party, statuses: ["active"], db) { return false }
            return true
        }
        return try isCurrentMember(operation(ofTopic: topic), uid, statuses: action == .read ? ["draft", "active"] : ["active"], db)
    }

    /// `op_{operation}_dm_{a}_{b}`: the operation and the two user ids (lowercase UUIDs, `a` < `b`); nil for any other topic.
    static func direct(ofTopic topic: String) -> (operation: String, parties: [String])? {
        let parts = topic.split(separator: "_", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, parts[0] == "op", parts[2] == "dm" else { return nil }
        let ids = [parts[1], parts[3], parts[4]]
        guard ids.allSatisfy({ $0.count == 36 && $0 == $0.lowercased() && UUID(uuidString: $0) != nil }), parts[3] < parts[4] else { return nil }
        return (parts[1], [parts[3], parts[4]])
    }

    // MARK: The tables

    /// Its SQL's policies (`SurvaleSQL/001_survale.sql`), read once (`SQLPolicies`), and in Swift only what its
    /// triggers do: `guard_user` (team and agency are the agency's) and `guard_operation` (only the name and the
    /// incident number change outside the RPCs).
    static func policies() -> Policies { tablePolicies }

    static let tablePolicies = SQLTables.policies(folder: folder, files: files, schema: schema, guards: [
        "users": { old, new, _ in
            ["id", "team_id", "agency_id"].contains { old[$0] != new[$0] } ? "team and agency are set by the agency" : nil
        },
        "operations": { old, new, _ in
            let fixed = ["id", "agency_id", "team_id", "case_agent_id", "status", "started_at", "ended_at", "end_reason", "idle_since"]
            return fixed.contains { old[$0] != new[$0] }
                ? "only name and incident_number can be changed; start_operation and end_operation change the status" : nil
        },
    ])
}
