import Foundation
import Logging
import PostgresNIO

/// Sets a database up for the app it serves: the platform's SQL
/// (`Storage/PostgreSQL`), then the app's own files (`Apps/<App>/`), each once
/// (again only when a new build changes it: re-applying would undo what
/// later migrations did to its grants and policies); then the app's policy
/// choices (`--strict-policies`), each applied when it changed; then each
/// `--migrations` file once, in name order; then the app's settings. Files are
/// recorded with their checksums in `auth.convoy_migrations`. Every built-in
/// file is idempotent, so a database set up by an older build (one file,
/// `001_greenbox.sql`, held the platform and Green Box) is brought up to date
/// in place. One server migrates a database at a time (an advisory lock);
/// each file is one transaction.
struct Migrations {
    let connection: PostgresConnection
    let app: any ServerApp
    let logger: Logger

    /// The advisory lock key ("convoy" in ASCII).
    static let lockKey = 0x636f6e766f79
    /// The platform's SQL: its bundle folder and files, applied in order.
    static let platform = (folder: "PostgreSQL", files: ["000_platform.sql", "001_object_storage.sql", "002_realtime_authorization.sql"])

    func apply(_ configuration: ServerConfiguration) async throws {
        try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
        do {
            try await run(configuration)
            try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
        } catch {
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
            throw error
        }
    }

    private func run(_ configuration: ServerConfiguration) async throws {
        try await connection.query("CREATE SCHEMA IF NOT EXISTS auth", logger: logger)
        try await connection.query("""
            CREATE TABLE IF NOT EXISTS auth.convoy_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
        try await connection.query("ALTER TABLE auth.convoy_migrations ADD COLUMN IF NOT EXISTS checksum text", logger: logger)

        for name in Self.platform.files { try await builtIn(name, folder: Self.platform.folder) }
        // `--app-schema database`: the app's tables are the database's own (e.g. from `convoy schema`); its SQL is not applied.
        let choices = configuration.appSchema == .builtIn ? app.postgresChoices(configuration) : []
        for name in configuration.appSchema == .builtIn ? app.postgresFiles : [] {
            // The app's files leave each choice at its initial value.
            try await builtIn(name, folder: app.postgresFolder, after: choices.map { set($0.setting, to: $0.initial) })
        }
        for choice in choices where try await setting(choice.setting) ?? choice.initial != choice.wanted {
            try await file(try Self.resource(choice.file, folder: app.postgresFolder), label: "\(choice.file) (built in)",
                           after: [set(choice.setting, to: choice.wanted)])
        }

        if let dir = configuration.migrationsDirectory {
            let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".sql") }.sorted()
            for name in files where try await recorded(name) == nil {
                let url = URL(fileURLWithPath: dir).appendingPathComponent(name)
                let text: String
                do {
                    text = try String(contentsOf: url, encoding: .utf8)
                } catch {
                    throw ServerConfiguration.Invalid(description: "\(url.path): cannot read it (\(error.localizedDescription))")
                }
                try await file(text, label: url.path, record: name, checksum: Self.checksum(text))
                logger.info("applied migration", metadata: ["file": "\(url.path)"])
            }
        }
        // Settings the app's SQL reads, and Realtime on every table with a one-column key.
        for (key, value) in app.postgresSettings(configuration).sorted(by: { $0.key < $1.key }) {
            try await connection.query(set(key, to: value), logger: logger)
        }
        try await connection.query("""
            SELECT auth.attach_realtime(c.oid::regclass, a.attname::text) FROM pg_index i
              JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
              JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
              WHERE i.indisprimary AND i.indnatts = 1 AND c.relkind IN ('r', 'p')
            """, logger: logger)
    }

    /// Applies a file of the build when the database has not recorded it with
    /// this text's checksum. Roles and grants are cluster-wide, outside the
    /// advisory lock (which is per database): a server migrating another
    /// database at the same moment can collide with this one there. Such a
    /// collision is retried.
    private func builtIn(_ name: String, folder: String, after: [PostgresQuery] = []) async throws {
        let text = try Self.resource(name, folder: folder)
        let checksum = Self.checksum(text)
        guard try await recorded(name) != checksum else { return }
        var attempt = 0
        while true {
            do {
                try await file(text, label: "\(name) (built in)", record: name, checksum: checksum, after: after)
                return
            } catch let error as ServerConfiguration.Invalid where attempt < 5 && Self.isRace(error.description) {
                attempt += 1
                try await Task.sleep(for: .milliseconds(50 * attempt))
            }
        }
    }

    /// The checksum recorded for a migration, or nil when it was never applied.
    private func recorded(_ name: String) async throws -> String?? {
        for try await (checksum,) in try await connection.query(
            "SELECT checksum FROM auth.convoy_migrations WHERE name = \(name)", logger: logger).decode((String?,).self) {
            return .some(checksum)
        }
        return nil
    }

    /// The JWT secret kept in `auth.convoy_settings` (no API role reads it): the
    /// one stored, or `fresh` stored now.
    func jwtSecret(orStore fresh: String) async throws -> String {
        try await connection.query("INSERT INTO auth.convoy_settings VALUES ('jwt_secret', \(fresh)) ON CONFLICT (key) DO NOTHING",
                                   logger: logger)
        return try await setting("jwt_secret") ?? fresh
    }

    /// A server setting (`auth.convoy_settings`), nil when unset.
    private func setting(_ key: String) async throws -> String? {
        for try await (value,) in try await connection.query(
            "SELECT value FROM auth.convoy_settings WHERE key = \(key)", logger: logger).decode((String,).self) {
            return value
        }
        return nil
    }

    private func set(_ key: String, to value: String) -> PostgresQuery {
        "INSERT INTO auth.convoy_settings VALUES (\(key), \(value)) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
    }

    /// A SQL file of the build: `name` in the bundle folder `folder`.
    static func resource(_ name: String, folder: String) throws -> String {
        let base = name.hasSuffix(".sql") ? String(name.dropLast(4)) : name
        guard let url = Bundle.module.url(forResource: base, withExtension: "sql", subdirectory: folder),
              let text = try? String(contentsOf: url, encoding: .utf8)
        else { throw PostgresStoreError("the build is missing its PostgreSQL SQL (\(folder)/\(name))") }
        return text
    }

    /// FNV-1a (64 bits) of the text, in hex: stable across runs, unlike `Hasher`.
    static func checksum(_ text: String) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in text.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return String(h, radix: 16)
    }

    /// A concurrent catalog update on cluster-wide objects (roles, their members).
    static func isRace(_ message: String) -> Bool {
        message.contains("23505") || message.contains("tuple concurrently updated") || message.contains("40001")
            || message.contains("40P01")
    }

    /// One SQL text in one transaction, recorded when `record` is given, with
    /// `after` run last in it; a failing statement names the file and line.
    private func file(_ text: String, label: String, record: String? = nil, checksum: String? = nil,
                      after: [PostgresQuery] = []) async throws {
        try await connection.query("BEGIN", logger: logger)
        do {
            for statement in SQLScript.statements(text) {
                do {
                    try await connection.query(PostgresQuery(unsafeSQL: statement.sql), logger: logger)
                } catch {
                    throw ServerConfiguration.Invalid(description: "\(label):\(statement.line): \(PostgresStore.describe(error))")
                }
            }
            if let record {
                try await connection.query("""
                    INSERT INTO auth.convoy_migrations (name, checksum) VALUES (\(record), \(checksum))
                    ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
                    """, logger: logger)
            }
            for query in after { try await connection.query(query, logger: logger) }
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }
}
