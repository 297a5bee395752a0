import ConvoySodium
import Foundation
import GRDB
import HTTPTypes

/// The RPCs behind Green Box's invite flow (greenbox-prd.md §5.2–5.3), run as
/// the server (PostgreSQL: `SECURITY DEFINER`), each check explicit.
struct InviteRPC: Sendable {
    let store: Store
    let clock: any ServerClock
    let ttl: Double
    let hub: RealtimeHub?

    /// 8 characters from an alphabet without look-alikes (no 0/O, 1/I/L): 31⁸ ≈ 8.5·10¹¹.
    static let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")

    static func newCode() -> String {
        // Rejection sampling keeps every character equally likely.
        var out = ""
        while out.count < 8 {
            for b in Sodium.randomBytes(16) where b < 248 && out.count < 8 {
                out.append(alphabet[Int(b) % alphabet.count])
            }
        }
        return out
    }

    static func preference(_ args: [String: Any]) throws(APIError) -> String {
        let p = args["preference"] as? String ?? "precise"
        guard GreenBoxServer.preferences.contains(p) else {
            throw .postgrest(.badRequest, "22023", "preference must be 'precise' or 'general', got '\(p)'")
        }
        return p
    }

    /// `create_invite(preference text)` → `{code, expires_at}`.
    func create(_ args: [String: Any], as uid: String) async throws -> SQLiteTables.JSONRow {
        let preference = try Self.preference(args)
        let now = clock.now()
        let expires = Timestamps.format(now.addingTimeInterval(ttl))
        return try await store.pool.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)", arguments: [uid]) == true else {
                throw APIError.postgrest(.badRequest, "P0001", "create a users row (with your public key) before inviting")
            }
            for _ in 0..<5 {
                let code = Self.newCode()
                do {
                    try db.execute(sql: "INSERT INTO invites (code, inviter_id, preference, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                                   arguments: [code, uid, preference, Timestamps.format(now), expires])
                    return ["code": code.databaseValue, "expires_at": expires.databaseValue]
                } catch let e as DatabaseError where e.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY {
                    continue
                }
            }
            throw APIError.postgrest(.internalServerError, "P0001", "could not allocate an invite code")
        }
    }

    /// `accept_invite(code text, preference text)` → the friendship row, active,
    /// with each side's sharing preference. One error for every kind of bad
    /// code, so codes cannot be told apart by probing.
    func accept(_ args: [String: Any], as uid: String) async throws -> SQLiteTables.JSONRow {
        guard let code = (args["code"] as? String)?.uppercased(), !code.isEmpty else {
            throw APIError.postgrest(.badRequest, "22023", "code is required")
        }
        let preference = try Self.preference(args)
        let now = Timestamps.format(clock.now())
        let hub = self.hub
        return try await store.pool.write { db in
            let invalid = APIError.postgrest(.badRequest, "P0001", "invite code is invalid, expired or already used")
            guard let invite = try Row.fetchOne(db, sql: "SELECT * FROM invites WHERE code = ?", arguments: [code]),
                  (invite["accepted_by"] as String?) == nil, (invite["expires_at"] as String) > now
            else { throw invalid }
            let inviter: String = invite["inviter_id"]
            guard inviter != uid else {
                throw APIError.postgrest(.badRequest, "P0001", "you cannot accept your own invite")
            }
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)", arguments: [uid]) == true else {
                throw APIError.postgrest(.badRequest, "P0001", "create a users row (with your public key) before accepting")
            }
            try db.execute(sql: "UPDATE invites SET accepted_by = ?, accepted_at = ? WHERE code = ?", arguments: [uid, now, code])
            let inviterPreference: String = invite["preference"]
            if let existing = try Row.fetchOne(db, sql: """
                SELECT * FROM friendships WHERE (user_id_1 = ? AND user_id_2 = ?) OR (user_id_1 = ? AND user_id_2 = ?)
                """, arguments: [inviter, uid, uid, inviter]) {
                // Re-accepting after a device migration: the same row becomes active again.
                let inviterIsOne = (existing["user_id_1"] as String) == inviter
                try db.execute(sql: "UPDATE friendships SET status = 'active', requested_by = ?, preference_1 = ?, preference_2 = ? WHERE id = ?",
                               arguments: [inviter, inviterIsOne ? inviterPreference : preference,
                                           inviterIsOne ? preference : inviterPreference, existing["id"] as Int64])
                let row = try Self.friendship(db, id: existing["id"])
                let change = ChangeEvent(table: "friendships", type: "UPDATE", record: row,
                                         oldRecord: SQLiteTables.row(existing, GreenBoxServer.schema.tables["friendships"]!), commitTimestamp: now)
                db.afterNextTransaction { _ in hub?.publish(change) }
                return row
            }
            try db.execute(sql: """
                INSERT INTO friendships (user_id_1, user_id_2, status, requested_by, preference_1, preference_2, created_at)
                VALUES (?, ?, 'active', ?, ?, ?, ?)
                """, arguments: [inviter, uid, inviter, inviterPreference, preference, now])
            let row = try Self.friendship(db, id: db.lastInsertedRowID)
            let change = ChangeEvent(table: "friendships", type: "INSERT", record: row, oldRecord: [:], commitTimestamp: now)
            db.afterNextTransaction { _ in hub?.publish(change) }
            return row
        }
    }

    static func friendship(_ db: Database, id: Int64) throws -> SQLiteTables.JSONRow {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM friendships WHERE id = ?", arguments: [id]) else { return [:] }
        return SQLiteTables.json(row, GreenBoxServer.schema.tables["friendships"]!.columns.map(\.name))
    }
}
