import Foundation
import GRDB

/// Survale's row-level security on the SQLite store, each policy written to
/// mirror its SQL in `SurvaleSQL/001_survale.sql` (quoted above each), and the
/// helpers those policies call (`is_operation_member` and the rest).
extension SurvaleServer {
    typealias Predicate = Policies.Predicate

    // MARK: Who the caller is to an operation (the SQL's SECURITY DEFINER helpers)

    /// `my_agency()`, `my_team()` as SQL over a bound user id.
    static let myAgency = "(SELECT agency_id FROM users WHERE id = ?)"
    static let myTeam = "(SELECT team_id FROM users WHERE id = ?)"

    /// `is_operation_member(<column>)`: was ever a member.
    static func memberSQL(_ column: String) -> String {
        "EXISTS (SELECT 1 FROM operation_members m WHERE m.operation_id = \(column) AND m.user_id = ?)"
    }

    /// `is_case_agent(<column>)`.
    static func caseAgentSQL(_ column: String) -> String {
        "EXISTS (SELECT 1 FROM operations o WHERE o.id = \(column) AND o.case_agent_id = ?)"
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

    static func isCaseAgent(_ op: String?, _ uid: String, _ db: Database) throws -> Bool {
        guard let op else { return false }
        return try Bool.fetchOne(db, sql: "SELECT \(caseAgentSQL("?"))", arguments: [op, uid]) ?? false
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
    static func realtimeAllows(_ action: ChannelAction, topic: String, as who: Principal, in db: Database) throws -> Bool {
        guard who.role == .authenticated, let uid = who.userID else { return false }
        return try isCurrentMember(operation(ofTopic: topic), uid, statuses: action == .read ? ["draft", "active"] : ["active"], db)
    }

    // MARK: The tables

    static func policies() -> Policies {
        @Sendable func text(_ row: Policies.Row, _ c: String) -> String? { String.fromDatabaseValue(row[c] ?? .null) }
        // Each names its table's column in full: inside the helper's subquery a bare name is the subquery's own.
        func byOperation(_ table: String) -> @Sendable (String) -> Predicate {
            { uid in Predicate(sql: memberSQL("\"\(table)\".operation_id"), arguments: [uid.databaseValue]) }
        }
        func caseAgentOnly(_ table: String) -> @Sendable (String) -> Predicate {
            { uid in Predicate(sql: caseAgentSQL("\"\(table)\".operation_id"), arguments: [uid.databaseValue]) }
        }
        let caseAgentCheck: Policies.Check = { row, uid, db in try isCaseAgent(text(row, "operation_id"), uid, db) }
        let memberReads: @Sendable (Policies.Row, String, Database) throws -> Bool = { row, uid, db in
            try isMember(text(row, "operation_id"), uid, db)
        }
        // targets, staging_areas: SELECT USING (is_operation_member(operation_id));
        //   INSERT, UPDATE, DELETE: is_case_agent(operation_id).
        func caseAgentWrites(_ table: String) -> Policies.Table {
            Policies.Table(select: byOperation(table), insert: caseAgentCheck,
                           update: (using: caseAgentOnly(table), check: caseAgentCheck, guard: nil),
                           delete: caseAgentOnly(table), readable: memberReads)
        }
        return Policies(tables: [
            // agencies: SELECT USING (id = my_agency())
            "agencies": Policies.Table(
                select: { uid in Predicate(sql: "id = \(myAgency)", arguments: [uid.databaseValue]) },
                insert: nil, update: nil, delete: nil,
                readable: { row, uid, db in try text(row, "id") == String.fetchOne(db, sql: myAgency, arguments: [uid]) }),
            // teams: SELECT USING (agency_id = my_agency())
            "teams": Policies.Table(
                select: { uid in Predicate(sql: "agency_id = \(myAgency)", arguments: [uid.databaseValue]) },
                insert: nil, update: nil, delete: nil,
                readable: { row, uid, db in try text(row, "agency_id") == String.fetchOne(db, sql: myAgency, arguments: [uid]) }),
            // users: SELECT USING (agency_id = my_agency()); UPDATE USING/WITH CHECK (id = auth.uid()),
            //   team and agency fixed (guard_user). Provisioned by the service role.
            "users": Policies.Table(
                select: { uid in Predicate(sql: "agency_id = \(myAgency)", arguments: [uid.databaseValue]) },
                insert: nil,
                update: (using: { uid in Predicate(sql: "id = ?", arguments: [uid.databaseValue]) },
                         check: { row, uid, _ in text(row, "id") == uid },
                         guard: { old, new, _ in
                             ["id", "team_id", "agency_id"].contains { old[$0] != new[$0] } ? "team and agency are set by the agency" : nil
                         }),
                delete: nil,
                readable: { row, uid, db in try text(row, "agency_id") == String.fetchOne(db, sql: myAgency, arguments: [uid]) }),
            // operations: SELECT USING (case_agent_id = auth.uid() OR is_operation_member(id)
            //   OR (team_id = my_team() AND status <> 'draft')); UPDATE USING/WITH CHECK (case_agent_id = auth.uid()),
            //   only name and incident_number (guard_operation); created through create_operation.
            "operations": Policies.Table(
                select: { uid in
                    Predicate(sql: "(case_agent_id = ? OR \(memberSQL("operations.id")) OR (team_id = \(myTeam) AND status <> 'draft'))",
                              arguments: [uid.databaseValue, uid.databaseValue, uid.databaseValue])
                },
                insert: nil,
                update: (using: { uid in Predicate(sql: "case_agent_id = ?", arguments: [uid.databaseValue]) },
                         check: { row, uid, _ in text(row, "case_agent_id") == uid },
                         guard: { old, new, _ in
                             let fixed = ["id", "agency_id", "team_id", "case_agent_id", "status", "started_at", "ended_at", "end_reason", "idle_since"]
                             return fixed.contains { old[$0] != new[$0] }
                                 ? "only name and incident_number can be changed; start_operation and end_operation change the status" : nil
                         }),
                delete: nil,
                readable: { row, uid, db in
                    if text(row, "case_agent_id") == uid { return true }
                    if try isMember(text(row, "id"), uid, db) { return true }
                    let team = try String.fetchOne(db, sql: myTeam, arguments: [uid])
                    return text(row, "status") != "draft" && text(row, "team_id") == team
                }),
            // operation_members: SELECT USING (is_operation_member(operation_id) OR is_case_agent(operation_id));
            //   written through the RPCs only.
            "operation_members": Policies.Table(
                select: { uid in Predicate(sql: "(\(memberSQL("operation_members.operation_id")) OR \(caseAgentSQL("operation_members.operation_id")))",
                                           arguments: [uid.databaseValue, uid.databaseValue]) },
                insert: nil, update: nil, delete: nil,
                readable: { row, uid, db in
                    try isMember(text(row, "operation_id"), uid, db) || isCaseAgent(text(row, "operation_id"), uid, db)
                }),
            // operation_invites: SELECT USING (invitee_id = auth.uid() OR is_case_agent(operation_id));
            //   INSERT WITH CHECK (invited_by = auth.uid() AND status = 'pending' AND is_case_agent(operation_id)
            //     AND the invitee is in my agency); answered through respond_to_invite.
            "operation_invites": Policies.Table(
                select: { uid in Predicate(sql: "(invitee_id = ? OR \(caseAgentSQL("operation_invites.operation_id")))", arguments: [uid.databaseValue, uid.databaseValue]) },
                insert: { row, uid, db in
                    guard text(row, "invited_by") == uid, text(row, "status") == "pending", try isCaseAgent(text(row, "operation_id"), uid, db)
                    else { return false }
                    return try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ? AND agency_id = \(myAgency))",
                                             arguments: [text(row, "invitee_id"), uid]) ?? false
                },
                update: nil, delete: nil,
                readable: { row, uid, db in try text(row, "invitee_id") == uid || isCaseAgent(text(row, "operation_id"), uid, db) }),
            // join_requests: SELECT USING (requester_id = auth.uid() OR is_case_agent(operation_id));
            //   INSERT WITH CHECK (requester_id = auth.uid() AND status = 'pending' AND the operation is my team's and active).
            "join_requests": Policies.Table(
                select: { uid in Predicate(sql: "(requester_id = ? OR \(caseAgentSQL("join_requests.operation_id")))", arguments: [uid.databaseValue, uid.databaseValue]) },
                insert: { row, uid, db in
                    guard text(row, "requester_id") == uid, text(row, "status") == "pending" else { return false }
                    return try Bool.fetchOne(db, sql: """
                        SELECT EXISTS (SELECT 1 FROM operations WHERE id = ? AND team_id = \(myTeam) AND status = 'active')
                        """, arguments: [text(row, "operation_id"), uid]) ?? false
                },
                update: nil, delete: nil,
                readable: { row, uid, db in try text(row, "requester_id") == uid || isCaseAgent(text(row, "operation_id"), uid, db) }),
            "targets": caseAgentWrites("targets"),
            "staging_areas": caseAgentWrites("staging_areas"),
            // op_messages, locations_archive: SELECT USING (is_operation_member(operation_id));
            //   INSERT WITH CHECK (<sender_id | user_id> = auth.uid() AND is_current_member(operation_id, ARRAY['active'])).
            "op_messages": Policies.Table(
                select: byOperation("op_messages"),
                insert: { row, uid, db in
                    try text(row, "sender_id") == uid && isCurrentMember(text(row, "operation_id"), uid, statuses: ["active"], db)
                },
                update: nil, delete: nil, readable: memberReads),
            "locations_archive": Policies.Table(
                select: byOperation("locations_archive"),
                insert: { row, uid, db in
                    try text(row, "user_id") == uid && isCurrentMember(text(row, "operation_id"), uid, statuses: ["active"], db)
                },
                update: nil, delete: nil, readable: memberReads),
            // purge_log: no policy: only the service role reads it.
            "purge_log": Policies.Table(select: nil, insert: nil, update: nil, delete: nil),
        ])
    }
}
