import Foundation
import Logging
import PostgresNIO

/// QuickPic's tables in PostgreSQL, in a schema of their own (`quickpic`: the spec's Go server owns its
/// database; a schema keeps its `users` apart from anything else there), made at start if missing. Every
/// statement runs as the server's user: QuickPic checks access in its handlers, not with RLS.
final class QuickPicPostgresStore: QuickPicStore {
    let client: PostgresClient
    let logger: Logger

    private init(client: PostgresClient, logger: Logger) {
        (self.client, self.logger) = (client, logger)
    }

    /// Connects, creates the schema where missing, and returns the store with the JWT secret kept in the
    /// database (`fresh` on its first start unless `given`). Its `client` must run for queries to be served.
    static func open(url: String, pool: Int, given: String?, fresh: String, logger: Logger) async throws -> (QuickPicPostgresStore, String) {
        let target = try PostgresURL(url)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: target.connection, id: 0, logger: logger)
        } catch {
            throw PostgresStoreError("cannot connect to \(target.redacted): \(PostgresStore.describe(error))")
        }
        let secret: String
        do {
            // One start at a time makes the schema (two servers starting on one database would race).
            try await connection.query("SELECT pg_advisory_lock(7177001)", logger: logger)
            for statement in schema { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            try await connection.query("""
                INSERT INTO quickpic.settings (key, value) VALUES ('jwt_secret', \(fresh)) ON CONFLICT (key) DO NOTHING
                """, logger: logger)
            var kept = fresh
            for try await (value,) in try await connection.query("SELECT value FROM quickpic.settings WHERE key = 'jwt_secret'",
                                                                 logger: logger).decode((String,).self) {
                kept = value
            }
            secret = given ?? kept
            try await connection.query("SELECT pg_advisory_unlock(7177001)", logger: logger)
            try? await connection.close()
        } catch {
            try? await connection.close()
            throw PostgresStoreError("cannot prepare QuickPic's schema on \(target.redacted): \(PostgresStore.describe(error))")
        }
        var configuration = target.client
        configuration.options.maximumConnections = pool
        return (QuickPicPostgresStore(client: PostgresClient(configuration: configuration, backgroundLogger: logger), logger: logger), secret)
    }

    static let schema = [
        "CREATE SCHEMA IF NOT EXISTS quickpic",
        "CREATE TABLE IF NOT EXISTS quickpic.settings (key text PRIMARY KEY, value text NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS quickpic.users (
          id uuid PRIMARY KEY, username text NOT NULL UNIQUE, password_hash text NOT NULL,
          public_key bytea NOT NULL, signing_key bytea NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS quickpic.sessions (
          id uuid PRIMARY KEY, user_id uuid NOT NULL REFERENCES quickpic.users(id) ON DELETE CASCADE,
          created_at timestamptz NOT NULL, ended boolean NOT NULL DEFAULT false)
        """,
        """
        CREATE TABLE IF NOT EXISTS quickpic.refresh_tokens (
          token_hash text PRIMARY KEY, session_id uuid NOT NULL REFERENCES quickpic.sessions(id) ON DELETE CASCADE,
          revoked boolean NOT NULL DEFAULT false, expires_at timestamptz NOT NULL, created_at timestamptz NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS refresh_tokens_expiry ON quickpic.refresh_tokens (expires_at)",
        """
        CREATE TABLE IF NOT EXISTS quickpic.friend_requests (
          id uuid PRIMARY KEY, from_user_id uuid NOT NULL REFERENCES quickpic.users(id) ON DELETE CASCADE,
          to_user_id uuid NOT NULL REFERENCES quickpic.users(id) ON DELETE CASCADE,
          status text NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected')), created_at timestamptz NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS friend_requests_to ON quickpic.friend_requests (to_user_id, status)",
        """
        CREATE TABLE IF NOT EXISTS quickpic.friendships (
          id uuid PRIMARY KEY, user_a_id uuid NOT NULL REFERENCES quickpic.users(id) ON DELETE CASCADE,
          user_b_id uuid NOT NULL REFERENCES quickpic.users(id) ON DELETE CASCADE, created_at timestamptz NOT NULL,
          UNIQUE (user_a_id, user_b_id), CHECK (user_a_id < user_b_id))
        """,
        "CREATE INDEX IF NOT EXISTS friendships_b ON quickpic.friendships (user_b_id)",
        """
        CREATE TABLE IF NOT EXISTS quickpic.messages (
          seq bigserial PRIMARY KEY, id uuid NOT NULL UNIQUE,
          from_user_id uuid NOT NULL REFERENCES quickpic.users(id) ON DELETE CASCADE,
          to_user_id uuid NOT NULL REFERENCES quickpic.users(id) ON DELETE CASCADE,
          encrypted_content bytea NOT NULL, content_type text NOT NULL CHECK (content_type IN ('text', 'image')),
          signature text NOT NULL, created_at timestamptz NOT NULL, acked boolean NOT NULL DEFAULT false)
        """,
        "CREATE INDEX IF NOT EXISTS messages_to ON quickpic.messages (to_user_id, acked, seq)",
        "CREATE INDEX IF NOT EXISTS messages_created ON quickpic.messages (created_at)",
    ]

    /// One transaction on a pooled connection.
    @discardableResult
    func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { c in
            try await c.query("BEGIN", logger: logger)
            do {
                let value = try await body(c)
                try await c.query("COMMIT", logger: logger)
                return value
            } catch {
                _ = try? await c.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    private func users(_ query: PostgresQuery) async throws -> [(QuickPicUserRow, String)] {
        var out: [(QuickPicUserRow, String)] = []
        for try await (id, name, pk, sk, created, hash) in try await client.query(query, logger: logger)
            .decode((String, String, Data, Data, Date, String).self) {
            out.append((QuickPicUserRow(id: id, username: name, publicKey: [UInt8](pk), signingKey: [UInt8](sk), createdAt: created), hash))
        }
        return out
    }

    // MARK: Users

    func insertUser(_ u: QuickPicUserRow, passwordHash: String) async throws -> Bool {
        var inserted = false
        for try await _ in try await client.query("""
            INSERT INTO quickpic.users (id, username, password_hash, public_key, signing_key, created_at, updated_at)
            VALUES (\(u.id)::uuid, \(u.username), \(passwordHash), \(Data(u.publicKey)), \(Data(u.signingKey)), \(u.createdAt), \(u.createdAt))
            ON CONFLICT (username) DO NOTHING RETURNING 1
            """, logger: logger) {
            inserted = true
        }
        return inserted
    }

    func user(username: String) async throws -> QuickPicUserRow? {
        try await users("""
            SELECT id::text, username, public_key, signing_key, created_at, '' FROM quickpic.users WHERE username = \(username)
            """).first?.0
    }

    func user(id: String) async throws -> QuickPicUserRow? {
        try await users("""
            SELECT id::text, username, public_key, signing_key, created_at, '' FROM quickpic.users WHERE id = \(id)::uuid
            """).first?.0
    }

    func credentials(username: String) async throws -> (user: QuickPicUserRow, hash: String)? {
        try await users("""
            SELECT id::text, username, public_key, signing_key, created_at, password_hash FROM quickpic.users WHERE username = \(username)
            """).first.map { ($0.0, $0.1) }
    }

    // MARK: Sessions

    func insertSession(id: String, userID: String, refreshHash: String, expiresAt: Date, now: Date) async throws {
        try await transaction { c in
            try await c.query("INSERT INTO quickpic.sessions (id, user_id, created_at) VALUES (\(id)::uuid, \(userID)::uuid, \(now))",
                              logger: logger)
            try await c.query("""
                INSERT INTO quickpic.refresh_tokens (token_hash, session_id, expires_at, created_at)
                VALUES (\(refreshHash), \(id)::uuid, \(expiresAt), \(now))
                """, logger: logger)
        }
    }

    func rotate(refreshHash hash: String, freshHash: String, expiresAt: Date, now: Date) async throws -> QuickPicRefresh {
        try await transaction { c in
            var found: (String, Bool, Date, String, Bool)?
            for try await row in try await c.query("""
                SELECT t.session_id::text, t.revoked, t.expires_at, s.user_id::text, s.ended
                FROM quickpic.refresh_tokens t JOIN quickpic.sessions s ON s.id = t.session_id
                WHERE t.token_hash = \(hash) FOR UPDATE
                """, logger: logger).decode((String, Bool, Date, String, Bool).self) {
                found = row
            }
            guard let (sessionID, revoked, expires, userID, ended) = found else { return .notFound }
            if revoked || ended {
                try await c.query("UPDATE quickpic.sessions SET ended = true WHERE id = \(sessionID)::uuid", logger: logger)
                try await c.query("UPDATE quickpic.refresh_tokens SET revoked = true WHERE session_id = \(sessionID)::uuid", logger: logger)
                return .reused
            }
            if expires <= now { return .expired }
            try await c.query("UPDATE quickpic.refresh_tokens SET revoked = true WHERE token_hash = \(hash)", logger: logger)
            try await c.query("""
                INSERT INTO quickpic.refresh_tokens (token_hash, session_id, expires_at, created_at)
                VALUES (\(freshHash), \(sessionID)::uuid, \(expiresAt), \(now))
                """, logger: logger)
            return .rotated(userID: userID, sessionID: sessionID)
        }
    }

    func endSession(_ sessionID: String) async throws {
        try await transaction { c in
            try await c.query("UPDATE quickpic.sessions SET ended = true WHERE id = \(sessionID)::uuid", logger: logger)
            try await c.query("UPDATE quickpic.refresh_tokens SET revoked = true WHERE session_id = \(sessionID)::uuid", logger: logger)
        }
    }

    func sessionIsLive(_ sessionID: String) async throws -> Bool {
        for try await (ended,) in try await client.query("SELECT ended FROM quickpic.sessions WHERE id = \(sessionID)::uuid",
                                                         logger: logger).decode((Bool,).self) {
            return !ended
        }
        return false
    }

    // MARK: Friends

    func requestFriend(id: String, from: String, to: String, now: Date) async throws -> QuickPicRequestOutcome {
        let (a, b) = Self.pair(from, to)
        return try await transaction { c in
            // Two requests between the same pair at once: the second waits for the first, then sees it.
            try await c.query("SELECT pg_advisory_xact_lock(hashtext(\(a + b)))", logger: logger)
            for try await _ in try await c.query("""
                SELECT 1 FROM quickpic.friendships WHERE user_a_id = \(a)::uuid AND user_b_id = \(b)::uuid
                """, logger: logger) {
                return .alreadyFriends
            }
            for try await _ in try await c.query("""
                SELECT 1 FROM quickpic.friend_requests WHERE status = 'pending'
                AND ((from_user_id = \(from)::uuid AND to_user_id = \(to)::uuid) OR (from_user_id = \(to)::uuid AND to_user_id = \(from)::uuid))
                """, logger: logger) {
                return .pending
            }
            try await c.query("""
                INSERT INTO quickpic.friend_requests (id, from_user_id, to_user_id, status, created_at)
                VALUES (\(id)::uuid, \(from)::uuid, \(to)::uuid, 'pending', \(now))
                """, logger: logger)
            return .created(QuickPicRequestRow(id: id, fromUserID: from, fromUsername: nil, toUserID: to, status: "pending", createdAt: now))
        }
    }

    func incomingRequests(_ userID: String) async throws -> [QuickPicRequestRow] {
        var out: [QuickPicRequestRow] = []
        for try await (id, from, name, to, status, created) in try await client.query("""
            SELECT r.id::text, r.from_user_id::text, u.username, r.to_user_id::text, r.status, r.created_at
            FROM quickpic.friend_requests r JOIN quickpic.users u ON u.id = r.from_user_id
            WHERE r.to_user_id = \(userID)::uuid AND r.status = 'pending' ORDER BY r.created_at, r.id
            """, logger: logger).decode((String, String, String, String, String, Date).self) {
            out.append(QuickPicRequestRow(id: id, fromUserID: from, fromUsername: name, toUserID: to, status: status, createdAt: created))
        }
        return out
    }

    func decide(_ requestID: String, by userID: String, accept: Bool, friendshipID: String, now: Date) async throws -> QuickPicDecision {
        try await transaction { c in
            var found: (String, String, Date)?
            for try await row in try await c.query("""
                SELECT from_user_id::text, status, created_at FROM quickpic.friend_requests
                WHERE id = \(requestID)::uuid AND to_user_id = \(userID)::uuid FOR UPDATE
                """, logger: logger).decode((String, String, Date).self) {
                found = row
            }
            guard let (from, status, created) = found else { return .notFound }
            guard status == "pending" else { return .alreadyDecided }
            try await c.query("UPDATE quickpic.friend_requests SET status = \(accept ? "accepted" : "rejected") WHERE id = \(requestID)::uuid",
                              logger: logger)
            guard accept else {
                return .rejected(QuickPicRequestRow(id: requestID, fromUserID: from, fromUsername: nil, toUserID: userID,
                                                    status: "rejected", createdAt: created))
            }
            let (a, b) = Self.pair(from, userID)
            for try await (id, at) in try await c.query("""
                INSERT INTO quickpic.friendships (id, user_a_id, user_b_id, created_at) VALUES (\(friendshipID)::uuid, \(a)::uuid, \(b)::uuid, \(now))
                ON CONFLICT (user_a_id, user_b_id) DO UPDATE SET user_a_id = EXCLUDED.user_a_id RETURNING id::text, created_at
                """, logger: logger).decode((String, Date).self) {
                return .accepted(id: id, userA: a, userB: b, createdAt: at)
            }
            return .accepted(id: friendshipID, userA: a, userB: b, createdAt: now)
        }
    }

    func friends(_ userID: String) async throws -> [QuickPicFriendRow] {
        var out: [QuickPicFriendRow] = []
        for try await (id, name, pk, sk, created, since) in try await client.query("""
            SELECT u.id::text, u.username, u.public_key, u.signing_key, u.created_at, f.created_at
            FROM quickpic.friendships f
            JOIN quickpic.users u ON u.id = CASE WHEN f.user_a_id = \(userID)::uuid THEN f.user_b_id ELSE f.user_a_id END
            WHERE f.user_a_id = \(userID)::uuid OR f.user_b_id = \(userID)::uuid ORDER BY f.created_at, u.id
            """, logger: logger).decode((String, String, Data, Data, Date, Date).self) {
            out.append(QuickPicFriendRow(user: QuickPicUserRow(id: id, username: name, publicKey: [UInt8](pk), signingKey: [UInt8](sk),
                                                               createdAt: created), since: since))
        }
        return out
    }

    func areFriends(_ a: String, _ b: String) async throws -> Bool {
        let (x, y) = Self.pair(a, b)
        for try await _ in try await client.query("""
            SELECT 1 FROM quickpic.friendships WHERE user_a_id = \(x)::uuid AND user_b_id = \(y)::uuid
            """, logger: logger) {
            return true
        }
        return false
    }

    // MARK: Messages

    func insertMessage(_ m: QuickPicMessageRow) async throws {
        try await client.query("""
            INSERT INTO quickpic.messages (id, from_user_id, to_user_id, encrypted_content, content_type, signature, created_at)
            VALUES (\(m.id)::uuid, \(m.from)::uuid, \(m.to)::uuid, \(Data(m.content)), \(m.contentType), \(m.signature), \(m.createdAt))
            """, logger: logger)
    }

    func mailbox(_ userID: String, limit: Int) async throws -> [QuickPicMessageRow] {
        var out: [QuickPicMessageRow] = []
        for try await (id, from, to, content, type, signature, created) in try await client.query("""
            SELECT id::text, from_user_id::text, to_user_id::text, encrypted_content, content_type, signature, created_at
            FROM quickpic.messages WHERE to_user_id = \(userID)::uuid AND NOT acked ORDER BY seq LIMIT \(limit)
            """, logger: logger).decode((String, String, String, Data, String, String, Date).self) {
            out.append(QuickPicMessageRow(id: id, from: from, to: to, content: [UInt8](content), contentType: type, signature: signature,
                                          createdAt: created))
        }
        return out
    }

    func acknowledge(_ id: String, recipient: String, keep: Bool) async throws -> Bool {
        let query: PostgresQuery = keep
            ? "SELECT 1 FROM quickpic.messages WHERE id = \(id)::uuid AND to_user_id = \(recipient)::uuid"
            : "DELETE FROM quickpic.messages WHERE id = \(id)::uuid AND to_user_id = \(recipient)::uuid RETURNING 1"
        for try await _ in try await client.query(query, logger: logger) { return true }
        return false
    }

    func recipient(ofMessage id: String) async throws -> String? {
        for try await (to,) in try await client.query("SELECT to_user_id::text FROM quickpic.messages WHERE id = \(id)::uuid",
                                                      logger: logger).decode((String,).self) { return to }
        return nil
    }

    func addressee(ofRequest id: String) async throws -> String? {
        for try await (to,) in try await client.query("SELECT to_user_id::text FROM quickpic.friend_requests WHERE id = \(id)::uuid",
                                                      logger: logger).decode((String,).self) { return to }
        return nil
    }

    func refreshOwner(_ hash: String) async throws -> (userID: String, sessionID: String)? {
        for try await (user, session) in try await client.query("""
            SELECT s.user_id::text, s.id::text FROM quickpic.refresh_tokens t JOIN quickpic.sessions s ON s.id = t.session_id
            WHERE t.token_hash = \(hash)
            """, logger: logger).decode((String, String).self) { return (user, session) }
        return nil
    }

    func purgeMessages(before cutoff: Date) async throws -> Int {
        try await count("WITH gone AS (DELETE FROM quickpic.messages WHERE created_at < \(cutoff) RETURNING 1) SELECT count(*) FROM gone")
    }

    func purgeRefreshTokens(before cutoff: Date) async throws -> Int {
        try await count("WITH gone AS (DELETE FROM quickpic.refresh_tokens WHERE expires_at < \(cutoff) RETURNING 1) SELECT count(*) FROM gone")
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        for try await (n,) in try await client.query(query, logger: logger).decode((Int64,).self) { return Int(n) }
        return 0
    }
}
