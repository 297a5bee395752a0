import ConvoyJSON
import ConvoySodium
import ConvoyTime
import Foundation
import GRDB
import HTTPTypes

/// The RPCs behind Green Box's invite flow (greenbox-prd.md §5.2–5.3), run as
/// the server (PostgreSQL: `SECURITY DEFINER`), each check explicit. Rows are
/// written through the store's transaction, so Realtime hears of them as of
/// any other write.
struct InviteRPC: Sendable {
    let store: Store
    let clock: any ConvoyClock
    let ttl: Double

    static let invites = GreenBoxServer.schema.tables["invites"]!
    static let friendships = GreenBoxServer.schema.tables["friendships"]!

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

    /// `preference text DEFAULT 'precise'`, then `coalesce(preference, 'precise')`: absent or null is precise; any other
    /// JSON scalar is its text, as `json_to_record` gives it (`5` is "5", refused).
    static func preference(_ args: [String: JSONValue]) throws(APIError) -> String {
        let p = args["preference"]?.flatText ?? "precise"
        guard GreenBoxServer.preferences.contains(p) else {
            throw .postgrest(.badRequest, "22023", "preference must be 'precise' or 'general', got '\(p)'")
        }
        return p
    }

    /// `create_invite(preference text)` → `{code, expires_at}`.
    func create(_ args: [String: JSONValue], as uid: String) async throws -> SQLiteTables.JSONRow {
        let preference = try Self.preference(args)
        let now = clock.date
        let expires = Timestamps.format(now.addingTimeInterval(ttl))
        return try await store.write(at: Timestamps.format(now)) { tx in
            guard try Bool.fetchOne(tx.db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)", arguments: [uid]) == true else {
                throw APIError.postgrest(.badRequest, "P0001", "create a users row (with your public key) before inviting")
            }
            for _ in 0..<5 {
                let code = Self.newCode()
                do {
                    try tx.insert(into: Self.invites, [
                        "code": code.databaseValue, "inviter_id": uid.databaseValue, "preference": preference.databaseValue,
                        "created_at": tx.now.databaseValue, "expires_at": expires.databaseValue, "accepted_by": .null, "accepted_at": .null,
                    ])
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
    func accept(_ args: [String: JSONValue], as uid: String) async throws -> SQLiteTables.JSONRow {
        // `upper(code)` of a null code is NULL, which matches no invite: the one error for every bad code.
        let code = args["code"]?.flatText?.uppercased() ?? ""
        let preference = try Self.preference(args)
        return try await store.write(at: Timestamps.format(clock.date)) { tx in
            let (db, now) = (tx.db, tx.now)
            let invalid = APIError.postgrest(.badRequest, "P0001", "invite code is invalid, expired or already used")
            guard let invite = try Row.fetchOne(db, sql: "SELECT rowid AS _rowid, * FROM invites WHERE code = ?", arguments: [code]),
                  (invite["accepted_by"] as String?) == nil, (invite["expires_at"] as String) > now
            else { throw invalid }
            let inviter: String = invite["inviter_id"]
            guard inviter != uid else {
                throw APIError.postgrest(.badRequest, "P0001", "you cannot accept your own invite")
            }
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)", arguments: [uid]) == true else {
                throw APIError.postgrest(.badRequest, "P0001", "create a users row (with your public key) before accepting")
            }
            try tx.update(Self.invites, rowid: invite["_rowid"], old: Self.invites.values(of: invite),
                          set: ["accepted_by": uid.databaseValue, "accepted_at": now.databaseValue])
            let inviterPreference: String = invite["preference"]
            let columns = Self.friendships.columns.map(\.name)
            if let existing = try Row.fetchOne(db, sql: """
                SELECT rowid AS _rowid, * FROM friendships WHERE (user_id_1 = ? AND user_id_2 = ?) OR (user_id_1 = ? AND user_id_2 = ?)
                """, arguments: [inviter, uid, uid, inviter]) {
                // Re-accepting after a device migration: the same row becomes active again.
                let inviterIsOne = (existing["user_id_1"] as String) == inviter
                let row = try tx.update(Self.friendships, rowid: existing["_rowid"], old: Self.friendships.values(of: existing), set: [
                    "status": "active".databaseValue, "requested_by": inviter.databaseValue,
                    "preference_1": (inviterIsOne ? inviterPreference : preference).databaseValue,
                    "preference_2": (inviterIsOne ? preference : inviterPreference).databaseValue,
                ])
                return row.map { SQLiteTables.json($0, columns) } ?? [:]
            }
            let row = try tx.insert(into: Self.friendships, [
                "user_id_1": inviter.databaseValue, "user_id_2": uid.databaseValue, "status": "active".databaseValue,
                "requested_by": inviter.databaseValue, "preference_1": inviterPreference.databaseValue,
                "preference_2": preference.databaseValue, "created_at": now.databaseValue,
            ])
            return row.filter { columns.contains($0.key) }
        }
    }
}
