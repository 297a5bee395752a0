import Foundation
import GRDB

/// GoTrue's tables in the embedded store.
extension Store: AuthStore {
    func insertUser(id: String, email: String?, passwordHash: String?, now: Date) async throws -> Bool {
        let stamp = Timestamps.format(now)
        do {
            try await pool.write { db in
                try db.execute(sql: "INSERT INTO auth_users (id, email, password_hash, is_anonymous, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                               arguments: [id, email, passwordHash, email == nil, stamp, stamp])
            }
            return true
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            return false
        }
    }

    func credentials(email: String) async throws -> (id: String, hash: String?)? {
        // Sendable values out of the read, so GRDB's async (non-blocking) overload runs.
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT id, password_hash FROM auth_users WHERE email = ?", arguments: [email])
                .map { ($0["id"], $0["password_hash"]) }
        }
    }

    func insertSession(id: String, userID: String, refreshToken: String, now: Date) async throws {
        let stamp = Timestamps.format(now)
        try await pool.write { db in
            try db.execute(sql: "INSERT INTO auth_sessions (id, user_id, created_at) VALUES (?, ?, ?)", arguments: [id, userID, stamp])
            try db.execute(sql: "INSERT INTO auth_refresh_tokens (token, session_id, user_id, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [refreshToken, id, userID, stamp])
            try db.execute(sql: "UPDATE auth_users SET last_sign_in_at = ? WHERE id = ?", arguments: [stamp, userID])
        }
    }

    func rotate(token: String, fresh: String, now: Date, graceCutoff: Date) async throws -> RefreshOutcome {
        let (stamp, cutoff) = (Timestamps.format(now), Timestamps.format(graceCutoff))
        return try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT t.user_id, t.session_id, t.revoked, s.revoked AS session_revoked
                FROM auth_refresh_tokens t JOIN auth_sessions s ON s.id = t.session_id WHERE t.token = ?
                """, arguments: [token]) else { return .notFound }
            let sessionID: String = row["session_id"], userID: String = row["user_id"]
            if (row["session_revoked"] as Int) != 0 { return .reused }
            if (row["revoked"] as Int) != 0 {
                if let child = try String.fetchOne(db, sql: """
                    SELECT token FROM auth_refresh_tokens WHERE parent = ? AND revoked = 0 AND created_at >= ?
                    """, arguments: [token, cutoff]) {
                    return .rotated(userID: userID, sessionID: sessionID, token: child)
                }
                try db.execute(sql: "UPDATE auth_sessions SET revoked = 1 WHERE id = ?", arguments: [sessionID])
                return .reused
            }
            try db.execute(sql: "UPDATE auth_refresh_tokens SET revoked = 1 WHERE token = ?", arguments: [token])
            try db.execute(sql: "INSERT INTO auth_refresh_tokens (token, session_id, user_id, created_at, parent) VALUES (?, ?, ?, ?, ?)",
                           arguments: [fresh, sessionID, userID, stamp, token])
            return .rotated(userID: userID, sessionID: sessionID, token: fresh)
        }
    }

    func revokeSessions(userID: String, sessionID: String?) async throws {
        try await pool.write { db in
            if let sessionID {
                try db.execute(sql: "UPDATE auth_sessions SET revoked = 1 WHERE id = ?", arguments: [sessionID])
            } else {
                try db.execute(sql: "UPDATE auth_sessions SET revoked = 1 WHERE user_id = ?", arguments: [userID])
            }
        }
    }

    func sessionIsLive(_ sessionID: String) async throws -> Bool {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT revoked FROM auth_sessions WHERE id = ?", arguments: [sessionID]) == 0
        }
    }

    func authUser(id: String) async throws -> AuthUser? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM auth_users WHERE id = ?", arguments: [id]).map { r in
                func date(_ key: String) -> Date? { (r[key] as String?).flatMap { Timestamps.parse($0) } }
                return AuthUser(id: r["id"], email: r["email"], isAnonymous: (r["is_anonymous"] as Int) != 0,
                                createdAt: date("created_at") ?? .distantPast, updatedAt: date("updated_at") ?? .distantPast,
                                lastSignInAt: date("last_sign_in_at"))
            }
        }
    }

    /// The JWT secret kept with this database: the one stored, or `fresh`
    /// stored now when there is none (every later start signs as this one
    /// did, as a Supabase project keeps its secret).
    func jwtSecret(orStore fresh: String) async throws -> String {
        try await pool.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO auth_settings (key, value) VALUES ('jwt_secret', ?)", arguments: [fresh])
            return try String.fetchOne(db, sql: "SELECT value FROM auth_settings WHERE key = 'jwt_secret'") ?? fresh
        }
    }
}
