import GRDB

/// Row-level security for the embedded store, in one place, written to mirror
/// the SQL policies of greenbox-prd.md §3.2 (quoted above each). Semantics
/// follow PostgreSQL: `USING` hides rows (reads and writes simply do not see
/// them); `WITH CHECK` rejects a written row with 42501. The service role
/// bypasses RLS; `anon` has no policy anywhere.
struct Policies: Sendable {
    /// A predicate over a table's own columns, as SQL with bound arguments.
    struct Predicate: Sendable {
        var sql: String
        var arguments: [DatabaseValue]
        static let none = Predicate(sql: "0", arguments: [])
        static let all = Predicate(sql: "1", arguments: [])
    }

    typealias Row = [String: DatabaseValue]
    /// Decides whether `row` may be written by `uid`; may read the database.
    typealias Check = @Sendable (_ row: Row, _ uid: String, _ db: Database) throws -> Bool
    /// Column rules no policy can express (PostgreSQL needs a trigger for them):
    /// returns a message when the change from `old` to `new` is not allowed.
    typealias Guard = @Sendable (_ old: Row, _ new: Row, _ uid: String) -> String?

    struct Table: Sendable {
        var select: (@Sendable (String) -> Predicate)?
        var insert: Check?
        var update: (using: @Sendable (String) -> Predicate, check: Check, guard: Guard?)?
        var delete: (@Sendable (String) -> Predicate)?
        /// The SELECT policy again, over one row in memory: Realtime decides
        /// with it who may receive a change (Supabase checks RLS per subscriber).
        var readable: (@Sendable (Row, String) -> Bool)? = nil
    }

    var tables: [String: Table]

    static func greenBox(strict: Bool) -> Policies {
        let uidIs: @Sendable (String, String) -> Predicate = { column, uid in Predicate(sql: "\"\(column)\" = ?", arguments: [uid.databaseValue]) }
        let member: @Sendable (String) -> Predicate = { uid in
            Predicate(sql: "(user_id_1 = ? OR user_id_2 = ?)", arguments: [uid.databaseValue, uid.databaseValue])
        }
        @Sendable func text(_ row: Row, _ c: String) -> String? { String.fromDatabaseValue(row[c] ?? .null) }

        return Policies(tables: [
            // users: SELECT TO authenticated USING (true);
            //        INSERT WITH CHECK (id = auth.uid()); UPDATE USING (id = auth.uid()) WITH CHECK (id = auth.uid())
            "users": Table(
                select: { _ in .all },
                insert: { row, uid, _ in text(row, "id") == uid },
                update: (using: { uid in uidIs("id", uid) }, check: { row, uid, _ in text(row, "id") == uid }, guard: nil),
                delete: nil,
                readable: { _, _ in true }),
            // friendships: SELECT USING (auth.uid() IN (user_id_1, user_id_2));
            //   INSERT WITH CHECK (requested_by = auth.uid() AND status = 'pending' AND auth.uid() IN (user_id_1, user_id_2));
            //   UPDATE USING/WITH CHECK (auth.uid() IN (user_id_1, user_id_2)), plus a trigger: members and requester are
            //   fixed, only the invitee may activate, each member sets only their own preference;
            //   DELETE USING (auth.uid() IN (user_id_1, user_id_2)) — unfriending.
            "friendships": Table(
                select: member,
                // ... AND the invitee's preference is left to the invitee.
                insert: { row, uid, _ in
                    let invitee = text(row, "user_id_1") == uid ? "preference_2" : "preference_1"
                    return text(row, "requested_by") == uid && text(row, "status") == "pending"
                        && (text(row, "user_id_1") == uid || text(row, "user_id_2") == uid) && text(row, invitee) == nil
                },
                update: (using: member,
                         check: { row, uid, _ in text(row, "user_id_1") == uid || text(row, "user_id_2") == uid },
                         guard: { old, new, uid in
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
                         }),
                delete: member,
                readable: { row, uid in text(row, "user_id_1") == uid || text(row, "user_id_2") == uid }),
            // encrypted_locations: INSERT WITH CHECK (sender_id = auth.uid())
            //   [--strict-policies: AND EXISTS (SELECT 1 FROM friendships f WHERE f.status = 'active'
            //      AND ((f.user_id_1 = sender_id AND f.user_id_2 = recipient_id) OR (f.user_id_2 = sender_id AND f.user_id_1 = recipient_id)))];
            //   SELECT USING (recipient_id = auth.uid()). No UPDATE or DELETE: only the purge deletes.
            "encrypted_locations": Table(
                select: { uid in uidIs("recipient_id", uid) },
                insert: { row, uid, db in
                    guard text(row, "sender_id") == uid else { return false }
                    guard strict, let to = text(row, "recipient_id") else { return true }
                    return try Bool.fetchOne(db, sql: """
                        SELECT EXISTS (SELECT 1 FROM friendships WHERE status = 'active'
                          AND ((user_id_1 = ? AND user_id_2 = ?) OR (user_id_1 = ? AND user_id_2 = ?)))
                        """, arguments: [uid, to, to, uid]) ?? false
                },
                update: nil,
                delete: nil,
                readable: { row, uid in text(row, "recipient_id") == uid }),
            // invites: SELECT USING (inviter_id = auth.uid()); written only through the RPCs.
            "invites": Table(select: { uid in uidIs("inviter_id", uid) }, insert: nil, update: nil, delete: nil,
                             readable: { row, uid in text(row, "inviter_id") == uid }),
            // purge_log: no policy: only the service role reads it.
            "purge_log": Table(select: nil, insert: nil, update: nil, delete: nil),
        ])
    }
}
