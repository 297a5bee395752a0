import Foundation
import GRDB

/// The embedded SQLite store (GRDB, WAL). One file holds the auth schema and
/// the PRD's public tables; policies are enforced in Swift (`Policies`).
final class Store: Sendable {
    let pool: DatabasePool
    let path: String

    init(path: String) throws {
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(10)
        pool = try DatabasePool(path: path, configuration: config)
        self.path = path
        try Self.migrator.migrate(pool)
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1: auth and Green Box") { db in
            try db.execute(sql: """
                CREATE TABLE auth_users (
                  id TEXT PRIMARY KEY, email TEXT UNIQUE, password_hash TEXT,
                  is_anonymous INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
                  last_sign_in_at TEXT);
                CREATE TABLE auth_sessions (
                  id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
                  created_at TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE auth_refresh_tokens (
                  token TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES auth_sessions(id) ON DELETE CASCADE,
                  user_id TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);

                CREATE TABLE users (
                  id TEXT PRIMARY KEY REFERENCES auth_users(id) ON DELETE CASCADE,
                  created_at TEXT NOT NULL, full_name TEXT, avatar_url TEXT, public_key TEXT NOT NULL);
                CREATE TABLE friendships (
                  id INTEGER PRIMARY KEY AUTOINCREMENT,
                  user_id_1 TEXT NOT NULL REFERENCES users(id), user_id_2 TEXT NOT NULL REFERENCES users(id),
                  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'active')),
                  requested_by TEXT NOT NULL REFERENCES users(id),
                  preference_1 TEXT CHECK (preference_1 IN ('precise', 'general')),
                  preference_2 TEXT CHECK (preference_2 IN ('precise', 'general')),
                  created_at TEXT NOT NULL,
                  CHECK (user_id_1 <> user_id_2));
                CREATE INDEX friendships_user_1 ON friendships(user_id_1);
                CREATE INDEX friendships_user_2 ON friendships(user_id_2);
                CREATE TABLE encrypted_locations (
                  id INTEGER PRIMARY KEY AUTOINCREMENT,
                  sender_id TEXT NOT NULL REFERENCES users(id), recipient_id TEXT NOT NULL REFERENCES users(id),
                  payload TEXT NOT NULL, created_at TEXT NOT NULL);
                CREATE INDEX encrypted_locations_recipient ON encrypted_locations(recipient_id, created_at);
                CREATE INDEX encrypted_locations_created ON encrypted_locations(created_at);
                CREATE TABLE invites (
                  code TEXT PRIMARY KEY, inviter_id TEXT NOT NULL REFERENCES users(id),
                  preference TEXT NOT NULL CHECK (preference IN ('precise', 'general')),
                  created_at TEXT NOT NULL, expires_at TEXT NOT NULL, accepted_by TEXT REFERENCES users(id),
                  accepted_at TEXT);
                CREATE TABLE purge_log (
                  id INTEGER PRIMARY KEY AUTOINCREMENT, ran_at TEXT NOT NULL, deleted INTEGER NOT NULL,
                  cutoff TEXT NOT NULL);
                """)
        }
        m.registerMigration("v2: refresh token parents, for the reuse interval") { db in
            try db.execute(sql: "ALTER TABLE auth_refresh_tokens ADD COLUMN parent TEXT")
        }
        return m
    }
}
