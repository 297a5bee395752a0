import GRDB

/// Green Box's row-level security on the SQLite store, each policy written to
/// mirror its SQL in `GreenBoxSQL/001_greenbox.sql` (greenbox-prd.md §3.2,
/// quoted above each).
extension GreenBoxServer {
    static func policies(strict: Bool) -> Policies {
        let uidIs: @Sendable (String, String) -> Policies.Predicate = { column, uid in Policies.Predicate(sql: "\"\(column)\" = ?", arguments: [uid.databaseValue]) }
        let member: @Sendable (String) -> Policies.Predicate = { uid in
            Policies.Predicate(sql: "(user_id_1 = ? OR user_id_2 = ?)", arguments: [uid.databaseValue, uid.databaseValue])
        }
        @Sendable func text(_ row: Policies.Row, _ c: String) -> String? { String.fromDatabaseValue(row[c] ?? .null) }

        return Policies(tables: [
            // users: SELECT TO authenticated USING (true);
            //        INSERT WITH CHECK (id = auth.uid()); UPDATE USING (id = auth.uid()) WITH CHECK (id = auth.uid())
            "users": Policies.Table(
                select: { _ in .all },
                insert: { row, uid, _ in text(row, "id") == uid },
                update: (using: { uid in uidIs("id", uid) }, check: { row, uid, _ in text(row, "id") == uid }, guard: nil),
                delete: nil,
                readable: { _, _, _ in true }),
            // friendships: SELECT USING (auth.uid() IN (user_id_1, user_id_2));
            //   INSERT WITH CHECK (requested_by = auth.uid() AND status = 'pending' AND auth.uid() IN (user_id_1, user_id_2));
            //   UPDATE USING/WITH CHECK (auth.uid() IN (user_id_1, user_id_2)), plus a trigger: members and requester are
            //   fixed, only the invitee may activate, each member sets only their own preference;
            //   DELETE USING (auth.uid() IN (user_id_1, user_id_2)) — unfriending.
            "friendships": Policies.Table(
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
                readable: { row, uid, _ in text(row, "user_id_1") == uid || text(row, "user_id_2") == uid }),
            // encrypted_locations: INSERT WITH CHECK (sender_id = auth.uid())
            //   [--strict-policies: AND EXISTS (SELECT 1 FROM friendships f WHERE f.status = 'active'
            //      AND ((f.user_id_1 = sender_id AND f.user_id_2 = recipient_id) OR (f.user_id_2 = sender_id AND f.user_id_1 = recipient_id)))];
            //   SELECT USING (recipient_id = auth.uid()). No UPDATE or DELETE: only the purge deletes.
            "encrypted_locations": Policies.Table(
                select: { uid in uidIs("recipient_id", uid) },
                insert: { row, uid, db in
                    guard text(row, "sender_id") == uid else { return false }
                    guard strict, let to = text(row, "recipient_id") else { return true }
                    return try Bool.fetchOne(db.cachedStatement(sql: """
                        SELECT EXISTS (SELECT 1 FROM friendships WHERE status = 'active'
                          AND ((user_id_1 = ? AND user_id_2 = ?) OR (user_id_1 = ? AND user_id_2 = ?)))
                        """), arguments: [uid, to, to, uid]) ?? false
                },
                update: nil,
                delete: nil,
                readable: { row, uid, _ in text(row, "recipient_id") == uid }),
            // invites: SELECT USING (inviter_id = auth.uid()); written only through the RPCs.
            "invites": Policies.Table(select: { uid in uidIs("inviter_id", uid) }, insert: nil, update: nil, delete: nil,
                             readable: { row, uid, _ in text(row, "inviter_id") == uid }),
            // purge_log: no policy: only the service role reads it.
            "purge_log": Policies.Table(select: nil, insert: nil, update: nil, delete: nil),
        ])
    }
}
