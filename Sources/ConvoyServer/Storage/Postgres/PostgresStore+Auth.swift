import Foundation
import PostgresNIO

/// GoTrue's tables in PostgreSQL's `auth` schema, used as the server's own user.
extension PostgresStore: AuthStore {
    func insertUser(id: String, email: String?, passwordHash: String?, now: Date) async throws -> Bool {
        do {
            try await transaction { c in
                try await c.query("""
                    INSERT INTO auth.users (id, email, password_hash, is_anonymous, created_at, updated_at)
                    VALUES (\(id)::uuid, \(email), \(passwordHash), \(email == nil), \(now), \(now))
                    """, logger: logger)
            }
            return true
        } catch let error as APIError where error.code == "23505" {
            return false
        }
    }

    func credentials(email: String) async throws -> (id: String, hash: String?)? {
        let found: Credentials? = try await transaction { c in
            for try await (id, hash) in try await c.query("SELECT id::text, password_hash FROM auth.users WHERE email = \(email)",
                                                         logger: logger).decode((String, String?).self) {
                return Credentials(id: id, hash: hash)
            }
            return nil
        }
        return found.map { ($0.id, $0.hash) }
    }

    private struct Credentials: Sendable { var id: String; var hash: String? }

    func insertSession(id: String, userID: String, refreshToken: String, now: Date) async throws {
        try await transaction { c in
            try await c.query("INSERT INTO auth.sessions (id, user_id, created_at) VALUES (\(id)::uuid, \(userID)::uuid, \(now))", logger: logger)
            try await c.query("""
                INSERT INTO auth.refresh_tokens (token, session_id, user_id, created_at) VALUES (\(refreshToken), \(id)::uuid, \(userID)::uuid, \(now))
                """, logger: logger)
            try await c.query("UPDATE auth.users SET last_sign_in_at = \(now) WHERE id = \(userID)::uuid", logger: logger)
        }
    }

    func rotate(token: String, fresh: String, now: Date, graceCutoff: Date) async throws -> RefreshOutcome {
        try await transaction { c in
            var found: (userID: String, sessionID: String, revoked: Bool, sessionRevoked: Bool)?
            for try await row in try await c.query("""
                SELECT t.user_id::text, t.session_id::text, t.revoked, s.revoked
                FROM auth.refresh_tokens t JOIN auth.sessions s ON s.id = t.session_id WHERE t.token = \(token) FOR UPDATE
                """, logger: logger).decode((String, String, Bool, Bool).self) {
                found = row
            }
            guard let found else { return .notFound }
            if found.sessionRevoked { return .reused }
            if found.revoked {
                for try await (child,) in try await c.query("""
                    SELECT token FROM auth.refresh_tokens WHERE parent = \(token) AND NOT revoked AND created_at >= \(graceCutoff)
                    """, logger: logger).decode((String,).self) {
                    return .rotated(userID: found.userID, sessionID: found.sessionID, token: child)
                }
                try await c.query("UPDATE auth.sessions SET revoked = true WHERE id = \(found.sessionID)::uuid", logger: logger)
                return .reused
            }
            try await c.query("UPDATE auth.refresh_tokens SET revoked = true WHERE token = \(token)", logger: logger)
            try await c.query("""
                INSERT INTO auth.refresh_tokens (token, session_id, user_id, created_at, parent)
                VALUES (\(fresh), \(found.sessionID)::uuid, \(found.userID)::uuid, \(now), \(token))
                """, logger: logger)
            return .rotated(userID: found.userID, sessionID: found.sessionID, token: fresh)
        }
    }

    func revokeSessions(userID: String, sessionID: String?) async throws {
        try await transaction { c in
            if let sessionID {
                try await c.query("UPDATE auth.sessions SET revoked = true WHERE id = \(sessionID)::uuid", logger: logger)
            } else {
                try await c.query("UPDATE auth.sessions SET revoked = true WHERE user_id = \(userID)::uuid", logger: logger)
            }
        }
    }

    func sessionIsLive(_ sessionID: String) async throws -> Bool {
        guard UUID(uuidString: sessionID) != nil else { return false }
        return try await transaction { c in
            for try await (revoked,) in try await c.query("SELECT revoked FROM auth.sessions WHERE id = \(sessionID)::uuid",
                                                           logger: logger).decode((Bool,).self) {
                return !revoked
            }
            return false
        }
    }

    func authUser(id: String) async throws -> AuthUser? {
        guard UUID(uuidString: id) != nil else { return nil }
        return try await transaction { c in
            for try await (id, email, anonymous, created, updated, lastSignIn) in try await c.query("""
                SELECT id::text, email, is_anonymous, created_at, updated_at, last_sign_in_at FROM auth.users WHERE id = \(id)::uuid
                """, logger: logger).decode((String, String?, Bool, Date, Date, Date?).self) {
                return AuthUser(id: id, email: email, isAnonymous: anonymous, createdAt: created, updatedAt: updated, lastSignInAt: lastSignIn)
            }
            return nil
        }
    }
}
