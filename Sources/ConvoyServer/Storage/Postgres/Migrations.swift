import Foundation
import Logging
import PostgresNIO

/// Applies Green Box's SQL (always: it is idempotent, and 001 resets the
/// location insert policy that 002 tightens), then each `--migrations` file
/// once, in name order, recorded in `auth.convoy_migrations`. One server
/// migrates at a time (an advisory lock); each file is one transaction.
struct Migrations {
    let connection: PostgresConnection
    let logger: Logger

    /// The advisory lock key ("convoy" in ASCII).
    static let lockKey = 0x636f6e766f79

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
        for name in ["001_greenbox"] + (configuration.strictPolicies ? ["002_strict_policies"] : []) {
            guard let url = Bundle.module.url(forResource: name, withExtension: "sql", subdirectory: "PostgreSQL") else {
                throw PostgresStoreError("the build is missing its PostgreSQL schema (\(name).sql)")
            }
            // Roles and grants are cluster-wide, outside the advisory lock (which is per
            // database): a server migrating another database at the same moment can
            // collide with this one there. Such a collision is retried.
            var attempt = 0
            while true {
                do {
                    try await file(url, label: "\(name).sql (built in)")
                    break
                } catch let error as ServerConfiguration.Invalid where attempt < 5 && Self.isRace(error.description) {
                    attempt += 1
                    try await Task.sleep(for: .milliseconds(50 * attempt))
                }
            }
        }
        try await connection.query("""
            CREATE TABLE IF NOT EXISTS auth.convoy_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
        if let dir = configuration.migrationsDirectory {
            let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".sql") }.sorted()
            for name in files {
                var applied = false
                for try await _ in try await connection.query("SELECT 1 FROM auth.convoy_migrations WHERE name = \(name)", logger: logger) {
                    applied = true
                }
                if applied { continue }
                let url = URL(fileURLWithPath: dir).appendingPathComponent(name)
                try await file(url, label: url.path, record: name)
                logger.info("applied migration", metadata: ["file": "\(url.path)"])
            }
        }
        // Server settings the SQL functions read, and Realtime on every table with a one-column key.
        try await connection.query("UPDATE auth.convoy_settings SET value = \("\(configuration.inviteTTL) seconds") WHERE key = 'invite_ttl'",
                                   logger: logger)
        try await connection.query("""
            SELECT auth.attach_realtime(c.oid::regclass, a.attname::text) FROM pg_index i
              JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
              JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
              WHERE i.indisprimary AND i.indnatts = 1 AND c.relkind IN ('r', 'p')
            """, logger: logger)
    }

    /// A concurrent catalog update on cluster-wide objects (roles, their members).
    static func isRace(_ message: String) -> Bool {
        message.contains("23505") || message.contains("tuple concurrently updated") || message.contains("40001")
            || message.contains("40P01")
    }

    /// One SQL file in one transaction; a failing statement names the file and line.
    private func file(_ url: URL, label: String, record: String? = nil) async throws {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw ServerConfiguration.Invalid(description: "\(label): cannot read it (\(error.localizedDescription))")
        }
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
                try await connection.query("INSERT INTO auth.convoy_migrations (name) VALUES (\(record))", logger: logger)
            }
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }
}

/// Reads the `public` schema: tables with their columns, keys and defaults,
/// and functions with their arguments.
struct Introspection {
    let connection: PostgresConnection
    let logger: Logger

    func read() async throws -> (Schema, [String: PostgresStore.Function]) {
        var tables: [String: Schema.Table] = [:]
        let columns = try await connection.query("""
            SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   a.attidentity::text, d.adbin IS NOT NULL
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
            WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
            ORDER BY c.relname, a.attnum
            """, logger: logger)
        for try await (table, name, type, notNull, identity, hasDefault) in columns.decode((String, String, String, Bool, String, Bool).self) {
            var column = Schema.Column(name: name, type: Schema.ColumnType(postgres: type), nullable: !notNull)
            if !identity.isEmpty { column.defaultValue = .identity } else if hasDefault { column.defaultValue = .database }
            tables[table, default: Schema.Table(name: table, columns: [], primaryKey: "")].columns.append(column)
        }
        let keys = try await connection.query("""
            SELECT c.relname::text, a.attname::text, i.indisprimary
            FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
            WHERE n.nspname = 'public' AND i.indisunique AND i.indnatts = 1
            """, logger: logger)
        for try await (table, column, primary) in keys.decode((String, String, Bool).self) {
            if primary { tables[table]?.primaryKey = column }
            tables[table]?.unique.insert(column)
        }
        var functions: [String: PostgresStore.Function] = [:]
        let procs = try await connection.query("""
            SELECT p.proname::text, coalesce(p.proargnames, '{}')::text[],
                   array(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t)::text[],
                   p.proretset, p.prorettype = 'void'::regtype
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND p.prokind = 'f' AND p.prorettype <> 'trigger'::regtype
            ORDER BY p.oid
            """, logger: logger)
        for try await (name, argNames, argTypes, returnsSet, returnsVoid) in procs.decode((String, [String], [String], Bool, Bool).self)
        where functions[name] == nil {
            let arguments = Dictionary(zip(argNames, argTypes).filter { !$0.0.isEmpty }, uniquingKeysWith: { a, _ in a })
            functions[name] = .init(arguments: arguments, returnsSet: returnsSet, returnsVoid: returnsVoid)
        }
        return (Schema(tables: tables), functions)
    }
}
