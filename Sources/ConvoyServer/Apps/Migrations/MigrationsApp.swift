import ConvoyJSON
import Foundation
import GRDB

/// A migrations folder's SQL as the SQLite store serves it (`convoy serve --app migrations`): its `CREATE TABLE`s and
/// indexes (`SQLTables`), its policies and the `LANGUAGE sql` functions they call (`SQLPolicies`). A statement it cannot
/// serve as PostgreSQL would (a trigger, a PL/pgSQL function, a `DO` block, a table without row-level security) is
/// refused at start with its file and line, and the message says to use PostgreSQL. Its RPCs are its
/// `LANGUAGE sql` functions that read (`SQLFunction`); its purge deletes the declared table's rows older than the retention.
struct MigrationsApp: ServerApp {
    let name = MigrationsServer.appName
    let folder: String
    let tables: SQLTables
    let rules: Policies
    /// The table and column whose age the purge counts; nil: it deletes nothing.
    let purge: (table: String, column: String)?
    /// Its `LANGUAGE sql` functions, its RPCs on SQLite.
    var functions: [String: SQLFunction] = [:]

    var schema: Schema { tables.schema }
    func policies(strict: Bool) -> Policies { rules }
    var sqliteMigrations: [SQLiteMigration] {
        tables.sqlite.isEmpty ? [] : [SQLiteMigration(identifier: "migrations \(folder): \(Self.checksum(tables.sqliteScript))", sql: tables.sqliteScript)]
    }

    func rpc(_ name: String, _ args: [String: JSONValue], as who: Principal, in context: SQLiteAppContext) async throws -> JSONValue? {
        guard let f = functions[SQLTables.sqliteName(name)] else { return nil }
        let all = functions
        return try await context.store.pool.read { db in try f.call(args, as: who, functions: all, in: db) }
    }

    func purge(before cutoff: Date, now: Date, in context: SQLiteAppContext) async throws -> Int {
        guard let purge else { return 0 }
        let cut = Timestamps.format(cutoff)
        return try await context.store.write(at: Timestamps.format(now)) { tx in
            try tx.db.execute(sql: "DELETE FROM \(purge.table) WHERE \(purge.column) < ?", arguments: [cut])
            return tx.db.changesCount
        }
    }

    /// Realtime Authorization: the folder's policies on `realtime.messages` over the channel's row (reading: its SELECT
    /// policies; sending or tracking: its INSERT policies), as PostgreSQL's would decide. None: no one joins a private channel.
    func realtimeAllows(_ action: ChannelAction, _ ext: RealtimeExtension, topic: String, as who: Principal, in db: Database) throws -> Bool {
        guard let uid = who.userID, let table = rules.tables[SQLPolicies.realtimeTable] else { return false }
        let row: Policies.Row = ["topic": topic.databaseValue, "extension": ext.rawValue.databaseValue]
        switch action {
        case .read: return try table.readable?(row, uid, db) ?? false
        case .write: return try table.insert?(row, uid, db) ?? false
        }
    }

    func housekeepingEvery(_ configuration: ServerConfiguration) -> Double? { nil }
    func housekeeping(_ context: HousekeepingContext) async throws -> [String] { [] }
    var defaultRetention: Double { 600 }

    // MARK: PostgreSQL: the folder is applied as `--migrations`; the purge is the declared one.

    let postgresFolder = ""
    let postgresFiles: [String] = []
    func postgresChoices(_ configuration: ServerConfiguration) -> [PostgresChoice] { [] }
    func postgresSettings(_ configuration: ServerConfiguration) -> [String: String] { [:] }
    var postgresFunction: String? = nil

    func postgresPurge(retention: Double, has: (String) -> Bool) -> String {
        if let postgresFunction { return "SELECT public.\(postgresFunction)(make_interval(secs => \(retention)))::text" }
        guard let purge else { return "SELECT '0'" }
        return "WITH gone AS (DELETE FROM public.\(purge.table) WHERE \(purge.column) < now() - make_interval(secs => \(retention)) RETURNING 1) "
            + "SELECT count(*)::text FROM gone"
    }

    var supabaseOptions: [(option: String, values: [String])] { [] }
    func supabaseSQL(_ options: [String: String]) throws -> String {
        throw ServerConfiguration.Invalid(description: "a migrations folder is already SQL for a Supabase project: apply its files in name order")
    }

    // MARK: Reading the folder

    /// On PostgreSQL: no tables of its own (the database has the folder's), the declared purge.
    static func onPostgres(_ configuration: ServerConfiguration) -> MigrationsApp {
        var app = MigrationsApp(folder: configuration.migrationsDirectory ?? "", tables: .empty, rules: Policies(tables: [:]), purge: purgeRule(configuration))
        app.postgresFunction = configuration.purgeFunction
        return app
    }

    static func purgeRule(_ configuration: ServerConfiguration) -> (table: String, column: String)? {
        guard let table = configuration.purgeTable, let column = configuration.purgeColumn else { return nil }
        return (table, column)
    }

    /// The folder's `*.sql` files in name order, read for SQLite; what it cannot serve is an error at its file and line.
    static func read(_ configuration: ServerConfiguration) throws -> MigrationsApp {
        let dir = configuration.migrationsDirectory ?? "."
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".sql") }.sorted()
        var scripts: [String] = []
        var tables = SQLTables.empty
        var secured: Set<String> = []
        var declared: [(table: String, file: String, line: Int)] = []
        for name in names {
            let path = URL(fileURLWithPath: dir).appendingPathComponent(name).path
            let text: String
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ServerConfiguration.Invalid(description: "\(path): cannot read it (\(error.localizedDescription))")
            }
            scripts.append(text)
            for statement in SQLScript.statements(text) {
                let at = "\(path):\(statement.line)"
                switch try Self.kind(statement.sql, at: at) {
                case .table:
                    do {
                        let read = try SQLTables(script: statement.sql)
                        for table in read.schema.tables.values { declared.append((table.name, path, statement.line)) }
                        tables.merge(read)
                    } catch {
                        throw ServerConfiguration.Invalid(description: "\(at): \(error.reason); the SQLite store cannot serve it: use PostgreSQL (--database postgres://…)")
                    }
                case .security(let table): secured.insert(table)
                case .other: break
                }
            }
        }
        for (table, file, line) in declared where !secured.contains(table) {
            throw ServerConfiguration.Invalid(description: "\(file):\(line): table \(table) has no row-level security (ALTER TABLE \(table) ENABLE ROW LEVEL SECURITY): "
                                              + "the SQLite store serves tables under their policies only")
        }
        let rules: Policies
        do {
            rules = try SQLPolicies.read(script: scripts.joined(separator: "\n"), schema: SQLPolicies.withRealtimeMessages(tables.schema))
        } catch {
            throw ServerConfiguration.Invalid(description: "\(dir): \(error.reason), in: \(error.statement.prefix(120)); the SQLite store cannot serve it: use PostgreSQL (--database postgres://…)")
        }
        let functions: [String: SQLFunction]
        do {
            functions = try SQLFunction.read(scripts.joined(separator: "\n"))
        } catch .invoker {
            throw ServerConfiguration.Invalid(description: "\(dir): a SECURITY INVOKER function that reads a table runs under the caller's policies on PostgreSQL, "
                                              + "which the SQLite store does not do inside functions: make it SECURITY DEFINER, or use PostgreSQL (--database postgres://…)")
        } catch .writes(let name) {
            throw ServerConfiguration.Invalid(description: "\(dir): function \(name) is not one SELECT; the SQLite store runs LANGUAGE sql functions that read: "
                                              + "use PostgreSQL (--database postgres://…)")
        }
        if let rule = purgeRule(configuration) {
            guard let t = tables.schema.tables[rule.table], t.columns.contains(where: { $0.name == rule.column }) else {
                throw ServerConfiguration.Invalid(description: "--purge-table \(rule.table) --purge-column \(rule.column): \(dir) has no such table and column")
            }
        }
        var app = MigrationsApp(folder: dir, tables: tables, rules: rules, purge: purgeRule(configuration))
        app.functions = functions
        return app
    }

    enum Kind: Equatable {
        case table, security(String), other
    }

    /// What a statement is to the SQLite store: a table or index, a table's row-level security switched on, or
    /// something it applies by reading it elsewhere (a policy, a `LANGUAGE sql` function) or that changes nothing
    /// here (grants, the Realtime publication, comments). Anything else is refused.
    static func kind(_ sql: String, at: String) throws(ServerConfiguration.Invalid) -> Kind {
        let t = SQLTokens(sql)
        let words = t.tokens.prefix(8).map(\.upper)
        func starts(_ w: [String]) -> Bool { words.starts(with: w) }
        if starts(["CREATE", "TABLE"]) || starts(["CREATE", "INDEX"]) || starts(["CREATE", "UNIQUE", "INDEX"]) { return .table }
        if starts(["ALTER", "TABLE"]), let i = words.firstIndex(of: "ENABLE"), words.dropFirst(i).starts(with: ["ENABLE", "ROW", "LEVEL", "SECURITY"]) {
            let name = words.count > 2 && words[2] == "ONLY" ? t.tokens[3].text : t.tokens[2].text
            return .security(SQLTables.sqliteName(name))
        }
        if starts(["CREATE", "POLICY"]) || starts(["DROP", "POLICY"]) || starts(["GRANT"]) || starts(["REVOKE"]) || starts(["COMMENT", "ON"])
            || starts(["ALTER", "PUBLICATION"]) { return .other }
        if starts(["CREATE", "FUNCTION"]) || starts(["CREATE", "OR", "REPLACE", "FUNCTION"]) {
            let all = t.tokens.map(\.upper)
            if let i = all.firstIndex(of: "LANGUAGE"), i + 1 < all.count, all[i + 1] == "SQL" || all[i + 1] == "'SQL'" { return .other }
            throw ServerConfiguration.Invalid(description: "\(at): a function not in LANGUAGE sql is not one the SQLite store runs "
                                              + "(it serves tables, indexes, row-level security and LANGUAGE sql functions): use PostgreSQL (--database postgres://…)")
        }
        let head = t.tokens.prefix(3).map(\.text).joined(separator: " ")
        throw ServerConfiguration.Invalid(description: "\(at): \(head) … is not served by the SQLite store "
                                          + "(it serves tables, indexes, row-level security and LANGUAGE sql functions): use PostgreSQL (--database postgres://…)")
    }

    static func checksum(_ text: String) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in text.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return String(h, radix: 16)
    }
}

extension SQLTables {
    static let empty = SQLTables(schema: Schema(tables: [:]), sqlite: [])

    mutating func merge(_ other: SQLTables) {
        schema = Schema(tables: schema.tables.merging(other.schema.tables) { _, new in new })
        sqlite += other.sqlite
    }
}
