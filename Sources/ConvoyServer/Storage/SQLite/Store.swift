import Foundation
import GRDB
import Synchronization

/// The embedded SQLite store (GRDB, WAL). One file holds the auth tables and
/// the app's (`ServerApp.sqliteMigrations`); policies are enforced in Swift
/// (`Policies`). Rows are written in `write`'s transactions, whose changes go
/// to Realtime's change feed once committed.
final class Store: Sendable {
    let pool: DatabasePool
    let path: String
    /// Where committed row changes go (nil: nowhere).
    let feed: ChangeFeed?

    /// Opens (or creates) the database at `path`. A new file is created
    /// private (0600): it holds password hashes, refresh tokens and the JWT
    /// secret; SQLite gives its WAL and shared-memory files the same mode.
    init(path: String, app: any ServerApp, feed: ChangeFeed? = nil) throws {
        self.feed = feed
        pool = try Self.openPrivate(path)
        self.path = path
        try Self.migrator(app).migrate(pool)
    }

    /// The database file at `path` as a WAL pool with foreign keys on; created private (0600) when missing.
    static func openPrivate(_ path: String) throws -> DatabasePool {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw StoreOpenError(path: path, reason: String(cString: strerror(errno)))
            }
        }
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(10)
        return try DatabasePool(path: path, configuration: config)
    }

    /// A write transaction at the server's time `now`: `body` writes rows
    /// through the `SQLiteTransaction`, and the changes it made go to the
    /// change feed right after COMMIT, on the serial writer queue — in commit
    /// order, as logical replication delivers them; never on rollback.
    func write<T: Sendable>(at now: String, _ body: @escaping @Sendable (SQLiteTransaction) throws -> T) async throws -> T {
        // One write at a time runs on the caller's own thread: GRDB's synchronous write is a
        // `dispatch_sync` onto the writer's queue, which libdispatch runs on the calling thread,
        // so a request's insert takes no hop to the writer's thread and back (at 3,000 phones:
        // 9 % fewer voluntary context switches in convoy serve). Only one: a caller blocks while the writer is
        // busy (a purge, say), and the other task threads must stay free for everything
        // else; the rest await the writer's queue as before.
        if inlineWriter.take() {
            defer { inlineWriter.release() }
            return try writeNow(at: now, body)
        }
        return try await pool.write { [self] db in try transaction(db, at: now, body) }
    }

    /// Whether a caller is writing on its own thread now. In a class of its own: Swift 6.3.1's optimizer crashes
    /// (an ownership verifier failure, `drop_deinit` of the `Atomic`) on this class's throwing init when the
    /// `Atomic` is a stored property of its own.
    private let inlineWriter = InlineWriterFlag()

    final class InlineWriterFlag: Sendable {
        private let flag = Atomic<Bool>(false)
        /// Takes the flag if it is free.
        func take() -> Bool { flag.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged }
        func release() { flag.store(false, ordering: .releasing) }
    }

    /// GRDB's synchronous write (an async function would be handed its async overload).
    private func writeNow<T>(at now: String, _ body: (SQLiteTransaction) throws -> T) throws -> T {
        try pool.write { db in try transaction(db, at: now, body) }
    }

    private func transaction<T>(_ db: Database, at now: String, _ body: (SQLiteTransaction) throws -> T) throws -> T {
        let transaction = SQLiteTransaction(db: db, now: now)
        let value = try body(transaction)
        let changes = transaction.changes
        if let feed, !changes.isEmpty {
            db.afterNextTransaction { [feed] db in feed.publish(changes, in: db) }
        }
        return value
    }

    /// The auth tables, then the app's. The first identifier is what files
    /// written before the app seam recorded (their v1 also made Green Box's
    /// tables; its migration creates them only where they are missing), so
    /// those files open as they are.
    static func migrator(_ app: any ServerApp) -> DatabaseMigrator {
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
                """)
        }
        m.registerMigration("v2: refresh token parents, for the reuse interval") { db in
            try db.execute(sql: "ALTER TABLE auth_refresh_tokens ADD COLUMN parent TEXT")
        }
        for migration in app.sqliteMigrations where !migration.afterPlatform {
            m.registerMigration(migration.identifier) { db in try db.execute(sql: migration.sql) }
        }
        // After the app's: files written before it have those already applied.
        m.registerMigration("v3: server settings (the JWT secret)") { db in
            try db.execute(sql: "CREATE TABLE auth_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        }
        m.registerMigration("v4: object storage (buckets and objects)") { db in try db.execute(sql: SQLiteObjectCatalog.migration) }
        for migration in app.sqliteMigrations where migration.afterPlatform {
            m.registerMigration(migration.identifier) { db in try db.execute(sql: migration.sql) }
        }
        return m
    }
}

/// The database file could not be created.
struct StoreOpenError: Error, CustomStringConvertible {
    var path: String
    var reason: String
    var description: String { "cannot create the database \(path): \(reason)" }
}
