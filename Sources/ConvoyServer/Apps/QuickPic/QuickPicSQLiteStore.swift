import Foundation
import GRDB

/// QuickPic's tables in an SQLite file (GRDB, WAL), created private (0600: it holds password hashes and
/// refresh-token hashes). Times are Unix microseconds.
final class QuickPicSQLiteStore: QuickPicStore {
    let pool: DatabasePool

    init(path: String) throws {
        pool = try Store.openPrivate(path)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("quickpic v1") { db in try db.execute(sql: Self.schema) }
        try migrator.migrate(pool)
    }

    static let schema = """
        CREATE TABLE qp_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE users (
          id TEXT PRIMARY KEY, username TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL,
          public_key BLOB NOT NULL, signing_key BLOB NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
        CREATE TABLE sessions (
          id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          created_at INTEGER NOT NULL, ended INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE refresh_tokens (
          token_hash TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
          revoked INTEGER NOT NULL DEFAULT 0, expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL);
        CREATE TABLE friend_requests (
          id TEXT PRIMARY KEY, from_user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          to_user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected')), created_at INTEGER NOT NULL);
        CREATE INDEX friend_requests_to ON friend_requests (to_user_id, status);
        CREATE TABLE friendships (
          id TEXT PRIMARY KEY, user_a_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          user_b_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, created_at INTEGER NOT NULL,
          UNIQUE (user_a_id, user_b_id), CHECK (user_a_id < user_b_id));
        CREATE INDEX friendships_b ON friendships (user_b_id);
        CREATE TABLE messages (
          seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
          from_user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          to_user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          encrypted_content BLOB NOT NULL, content_type TEXT NOT NULL CHECK (content_type IN ('text', 'image')),
          signature TEXT NOT NULL, created_at INTEGER NOT NULL, acked INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX messages_to ON messages (to_user_id, acked, seq);
        CREATE INDEX messages_created ON messages (created_at);
        """

    static func micros(_ d: Date) -> Int64 { Int64((d.timeIntervalSince1970 * 1_000_000).rounded(.down)) }
    static func date(_ m: Int64) -> Date { Date(timeIntervalSince1970: Double(m) / 1_000_000) }

    /// The JWT secret kept with the database (made on its first start), unless one is given.
    func secret(orStore fresh: String) async throws -> String {
        try await pool.write { db in
            if let s = try String.fetchOne(db, sql: "SELECT value FROM qp_settings WHERE key = 'jwt_secret'") { return s }
            try db.execute(sql: "INSERT INTO qp_settings (key, value) VALUES ('jwt_secret', ?)", arguments: [fresh])
            return fresh
        }
    }

    // MARK: Users

    func insertUser(_ u: QuickPicUserRow, passwordHash: String) async throws -> Bool {
        try await pool.write { db in
            guard try Int.fetchOne(db, sql: "SELECT 1 FROM users WHERE username = ?", arguments: [u.username]) == nil else { return false }
            let t = Self.micros(u.createdAt)
            try db.execute(sql: """
                INSERT INTO users (id, username, password_hash, public_key, signing_key, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [u.id, u.username, passwordHash, Data(u.publicKey), Data(u.signingKey), t, t])
            return true
        }
    }

    private static let userColumns = "id, username, public_key, signing_key, created_at"

    private static func user(_ row: Row, at offset: Int = 0) -> QuickPicUserRow {
        QuickPicUserRow(id: row[offset], username: row[offset + 1], publicKey: [UInt8](row[offset + 2] as Data),
                        signingKey: [UInt8](row[offset + 3] as Data), createdAt: date(row[offset + 4]))
    }

    func user(username: String) async throws -> QuickPicUserRow? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.userColumns) FROM users WHERE username = ?", arguments: [username]).map { Self.user($0) }
        }
    }

    func user(id: String) async throws -> QuickPicUserRow? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.userColumns) FROM users WHERE id = ?", arguments: [id]).map { Self.user($0) }
        }
    }

    func credentials(username: String) async throws -> (user: QuickPicUserRow, hash: String)? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.userColumns), password_hash FROM users WHERE username = ?", arguments: [username])
                .map { (Self.user($0), $0[5]) }
        }
    }

    // MARK: Sessions

    func insertSession(id: String, userID: String, refreshHash: String, expiresAt: Date, now: Date) async throws {
        try await pool.write { db in
            try db.execute(sql: "INSERT INTO sessions (id, user_id, created_at) VALUES (?, ?, ?)", arguments: [id, userID, Self.micros(now)])
            try db.execute(sql: "INSERT INTO refresh_tokens (token_hash, session_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [refreshHash, id, Self.micros(expiresAt), Self.micros(now)])
        }
    }

    func rotate(refreshHash hash: String, freshHash: String, expiresAt: Date, now: Date) async throws -> QuickPicRefresh {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT t.session_id, t.revoked, t.expires_at, s.user_id, s.ended
                FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id WHERE t.token_hash = ?
                """, arguments: [hash]) else { return .notFound }
            let sessionID: String = row[0], userID: String = row[3]
            if (row[1] as Int) != 0 || (row[4] as Int) != 0 {
                try db.execute(sql: "UPDATE sessions SET ended = 1 WHERE id = ?", arguments: [sessionID])
                try db.execute(sql: "UPDATE refresh_tokens SET revoked = 1 WHERE session_id = ?", arguments: [sessionID])
                return .reused
            }
            if (row[2] as Int64) <= Self.micros(now) { return .expired }
            try db.execute(sql: "UPDATE refresh_tokens SET revoked = 1 WHERE token_hash = ?", arguments: [hash])
            try db.execute(sql: "INSERT INTO refresh_tokens (token_hash, session_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [freshHash, sessionID, Self.micros(expiresAt), Self.micros(now)])
            return .rotated(userID: userID, sessionID: sessionID)
        }
    }

    func endSession(_ sessionID: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "UPDATE sessions SET ended = 1 WHERE id = ?", arguments: [sessionID])
            try db.execute(sql: "UPDATE refresh_tokens SET revoked = 1 WHERE session_id = ?", arguments: [sessionID])
        }
    }

    func sessionIsLive(_ sessionID: String) async throws -> Bool {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT ended FROM sessions WHERE id = ?", arguments: [sessionID]) == 0
        }
    }

    // MARK: Friends

    func requestFriend(id: String, from: String, to: String, now: Date) async throws -> QuickPicRequestOutcome {
        try await pool.write { db in
            let (a, b) = Self.pair(from, to)
            if try Int.fetchOne(db, sql: "SELECT 1 FROM friendships WHERE user_a_id = ? AND user_b_id = ?", arguments: [a, b]) != nil {
                return .alreadyFriends
            }
            if try Int.fetchOne(db, sql: """
                SELECT 1 FROM friend_requests WHERE status = 'pending'
                AND ((from_user_id = ? AND to_user_id = ?) OR (from_user_id = ? AND to_user_id = ?))
                """, arguments: [from, to, to, from]) != nil {
                return .pending
            }
            try db.execute(sql: "INSERT INTO friend_requests (id, from_user_id, to_user_id, status, created_at) VALUES (?, ?, ?, 'pending', ?)",
                           arguments: [id, from, to, Self.micros(now)])
            return .created(QuickPicRequestRow(id: id, fromUserID: from, fromUsername: nil, toUserID: to, status: "pending", createdAt: now))
        }
    }

    func incomingRequests(_ userID: String) async throws -> [QuickPicRequestRow] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT r.id, r.from_user_id, u.username, r.to_user_id, r.status, r.created_at
                FROM friend_requests r JOIN users u ON u.id = r.from_user_id
                WHERE r.to_user_id = ? AND r.status = 'pending' ORDER BY r.created_at, r.id
                """, arguments: [userID]).map {
                QuickPicRequestRow(id: $0[0], fromUserID: $0[1], fromUsername: $0[2], toUserID: $0[3], status: $0[4], createdAt: Self.date($0[5]))
            }
        }
    }

    func decide(_ requestID: String, by userID: String, accept: Bool, friendshipID: String, now: Date) async throws -> QuickPicDecision {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT from_user_id, to_user_id, status, created_at FROM friend_requests WHERE id = ? AND to_user_id = ?
                """, arguments: [requestID, userID]) else { return .notFound }
            guard (row[2] as String) == "pending" else { return .alreadyDecided }
            let from: String = row[0]
            try db.execute(sql: "UPDATE friend_requests SET status = ? WHERE id = ?", arguments: [accept ? "accepted" : "rejected", requestID])
            guard accept else {
                return .rejected(QuickPicRequestRow(id: requestID, fromUserID: from, fromUsername: nil, toUserID: userID,
                                                    status: "rejected", createdAt: Self.date(row[3])))
            }
            let (a, b) = Self.pair(from, userID)
            if let existing = try Row.fetchOne(db, sql: "SELECT id, created_at FROM friendships WHERE user_a_id = ? AND user_b_id = ?",
                                               arguments: [a, b]) {
                return .accepted(id: existing[0], userA: a, userB: b, createdAt: Self.date(existing[1]))
            }
            try db.execute(sql: "INSERT INTO friendships (id, user_a_id, user_b_id, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [friendshipID, a, b, Self.micros(now)])
            return .accepted(id: friendshipID, userA: a, userB: b, createdAt: now)
        }
    }

    func friends(_ userID: String) async throws -> [QuickPicFriendRow] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT u.id, u.username, u.public_key, u.signing_key, u.created_at, f.created_at
                FROM friendships f JOIN users u ON u.id = CASE WHEN f.user_a_id = ? THEN f.user_b_id ELSE f.user_a_id END
                WHERE f.user_a_id = ? OR f.user_b_id = ? ORDER BY f.created_at, u.id
                """, arguments: [userID, userID, userID]).map { QuickPicFriendRow(user: Self.user($0), since: Self.date($0[5])) }
        }
    }

    func areFriends(_ a: String, _ b: String) async throws -> Bool {
        let (x, y) = Self.pair(a, b)
        return try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT 1 FROM friendships WHERE user_a_id = ? AND user_b_id = ?", arguments: [x, y]) != nil
        }
    }

    // MARK: Messages

    func insertMessage(_ m: QuickPicMessageRow) async throws {
        try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO messages (id, from_user_id, to_user_id, encrypted_content, content_type, signature, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [m.id, m.from, m.to, Data(m.content), m.contentType, m.signature, Self.micros(m.createdAt)])
        }
    }

    func mailbox(_ userID: String, limit: Int) async throws -> [QuickPicMessageRow] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, from_user_id, to_user_id, encrypted_content, content_type, signature, created_at
                FROM messages WHERE to_user_id = ? AND acked = 0 ORDER BY seq LIMIT ?
                """, arguments: [userID, limit]).map {
                QuickPicMessageRow(id: $0[0], from: $0[1], to: $0[2], content: [UInt8]($0[3] as Data), contentType: $0[4],
                                   signature: $0[5], createdAt: Self.date($0[6]))
            }
        }
    }

    func acknowledge(_ id: String, recipient: String, keep: Bool) async throws -> Bool {
        try await pool.write { db in
            if keep {
                // A weakened server: the ACK is answered and nothing is deleted (the message stays fetchable).
                return try Int.fetchOne(db, sql: "SELECT 1 FROM messages WHERE id = ? AND to_user_id = ?", arguments: [id, recipient]) != nil
            }
            try db.execute(sql: "DELETE FROM messages WHERE id = ? AND to_user_id = ?", arguments: [id, recipient])
            return db.changesCount > 0
        }
    }

    func recipient(ofMessage id: String) async throws -> String? {
        try await pool.read { db in try String.fetchOne(db, sql: "SELECT to_user_id FROM messages WHERE id = ?", arguments: [id]) }
    }

    func addressee(ofRequest id: String) async throws -> String? {
        try await pool.read { db in try String.fetchOne(db, sql: "SELECT to_user_id FROM friend_requests WHERE id = ?", arguments: [id]) }
    }

    func refreshOwner(_ hash: String) async throws -> (userID: String, sessionID: String)? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: """
                SELECT s.user_id, s.id FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id WHERE t.token_hash = ?
                """, arguments: [hash]).map { ($0[0], $0[1]) }
        }
    }

    func purgeMessages(before cutoff: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM messages WHERE created_at < ?", arguments: [Self.micros(cutoff)])
            return db.changesCount
        }
    }

    func purgeRefreshTokens(before cutoff: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM refresh_tokens WHERE expires_at < ?", arguments: [Self.micros(cutoff)])
            return db.changesCount
        }
    }
}
