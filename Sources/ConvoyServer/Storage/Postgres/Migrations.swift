import Foundation
import Logging
import PostgresNIO

/// Applies Green Box's SQL once (again only when a new build changes it:
/// re-applying it would undo what later migrations did to its grants and
/// policies), switches the location insert policy to what `--strict-policies`
/// asks, then applies each `--migrations` file once, in name order. All are
/// recorded in `auth.convoy_migrations`. One server migrates a database at a
/// time (an advisory lock); each file is one transaction.
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
        try await connection.query("CREATE SCHEMA IF NOT EXISTS auth", logger: logger)
        try await connection.query("""
            CREATE TABLE IF NOT EXISTS auth.convoy_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
        try await connection.query("ALTER TABLE auth.convoy_migrations ADD COLUMN IF NOT EXISTS checksum text", logger: logger)

        let greenBox = try Self.builtIn("001_greenbox")
        let checksum = Self.checksum(greenBox)
        if try await recorded("001_greenbox.sql") != checksum {
            // Roles and grants are cluster-wide, outside the advisory lock (which is per
            // database): a server migrating another database at the same moment can
            // collide with this one there. Such a collision is retried.
            var attempt = 0
            while true {
                do {
                    try await file(greenBox, label: "001_greenbox.sql (built in)", record: "001_greenbox.sql", checksum: checksum,
                                   after: "INSERT INTO auth.convoy_settings VALUES ('location_insert_policy', 'prd') ON CONFLICT (key) DO UPDATE SET value = 'prd'")
                    break
                } catch let error as ServerConfiguration.Invalid where attempt < 5 && Self.isRace(error.description) {
                    attempt += 1
                    try await Task.sleep(for: .milliseconds(50 * attempt))
                }
            }
        }
        // The location insert policy: the PRD's, or active friends only.
        let wanted = configuration.strictPolicies ? "strict" : "prd"
        var current = "prd"
        for try await (value,) in try await connection.query(
            "SELECT value FROM auth.convoy_settings WHERE key = 'location_insert_policy'", logger: logger).decode((String,).self) {
            current = value
        }
        if current != wanted {
            let name = configuration.strictPolicies ? "002_strict_policies" : "002_prd_policies"
            try await file(try Self.builtIn(name), label: "\(name).sql (built in)",
                           after: "UPDATE auth.convoy_settings SET value = '\(wanted)' WHERE key = 'location_insert_policy'")
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

    /// The checksum recorded for a migration, or nil when it was never applied.
    private func recorded(_ name: String) async throws -> String?? {
        for try await (checksum,) in try await connection.query(
            "SELECT checksum FROM auth.convoy_migrations WHERE name = \(name)", logger: logger).decode((String?,).self) {
            return .some(checksum)
        }
        return nil
    }

    static func builtIn(_ name: String) throws -> String {
        guard let url = Bundle.module.url(forResource: name, withExtension: "sql", subdirectory: "PostgreSQL"),
              let text = try? String(contentsOf: url, encoding: .utf8)
        else { throw PostgresStoreError("the build is missing its PostgreSQL schema (\(name).sql)") }
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
                      after: String? = nil) async throws {
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
            if let after { try await connection.query(PostgresQuery(unsafeSQL: after), logger: logger) }
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

    /// A view created WITH (security_invoker = true): it reads as its caller.
    static let invokerView = "coalesce(c.reloptions, '{}') && ARRAY['security_invoker=true', 'security_invoker=on', 'security_invoker=1']"

    func read() async throws -> (Schema, [String: PostgresStore.Function]) {
        var tables: [String: Schema.Table] = [:]
        let columns = try await connection.query("""
            SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   a.attidentity::text, d.adbin IS NOT NULL
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
            WHERE n.nspname = 'public' AND (c.relkind IN ('r', 'p') OR (c.relkind = 'v' AND \(unescaped: Self.invokerView)))
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
        // A view runs as its owner, so RLS on its tables does not apply to whoever
        // reads it (unless security_invoker): such views are not served.
        for try await (view,) in try await connection.query("""
            SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind IN ('v', 'm') AND NOT (c.relkind = 'v' AND \(unescaped: Self.invokerView))
            """, logger: logger).decode((String,).self) {
            logger.warning("not serving view public.\(view): it reads as its owner, bypassing RLS (create it WITH (security_invoker = true))")
        }
        var functions: [String: PostgresStore.Function] = [:]
        // Input arguments only: proargnames and proallargtypes include OUT ones, which proargmodes tells apart.
        let procs = try await connection.query("""
            SELECT p.proname::text, coalesce(p.proargnames, '{}')::text[],
                   array(SELECT format_type(t, NULL) FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) t)::text[],
                   coalesce(p.proargmodes::text[], '{}'), p.proretset, p.prorettype = 'void'::regtype
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND p.prokind = 'f' AND p.prorettype <> 'trigger'::regtype
            ORDER BY p.oid
            """, logger: logger)
        for try await (name, argNames, argTypes, modes, returnsSet, returnsVoid) in procs.decode((String, [String], [String], [String], Bool, Bool).self) {
            guard functions[name] == nil else {
                logger.warning("function public.\(name) is overloaded: /rpc/\(name) calls the first one only")
                continue
            }
            var arguments: [String: String] = [:]
            for (i, type) in argTypes.enumerated() where i < argNames.count && !argNames[i].isEmpty {
                let mode = i < modes.count ? modes[i] : "i"
                if ["i", "b", "v"].contains(mode) { arguments[argNames[i]] = type }
            }
            functions[name] = .init(arguments: arguments, returnsSet: returnsSet, returnsVoid: returnsVoid)
        }
        return (Schema(tables: tables), functions)
    }
}
