/// An app's PostgreSQL script read for the SQLite store: its `CREATE TABLE` and `CREATE INDEX` statements
/// become the store's `Schema` and its SQLite DDL, so an app's tables are written once, in its SQL
/// (docs/architecture.md, "One server per app"). The subset read is what the apps' SQL uses: the types
/// `uuid`, `text`, `bigint`, `timestamptz` and `double precision`; `NOT NULL`, `PRIMARY KEY`,
/// `UNIQUE`, `REFERENCES`, `CHECK`, `DEFAULT` and `GENERATED ALWAYS AS IDENTITY` on a column; `UNIQUE`,
/// `CHECK`, `PRIMARY KEY` and `FOREIGN KEY` on a table. Anything else in a `CREATE TABLE` is an error that
/// names the statement, so an app cannot silently serve a table the SQLite store misreads; every other
/// statement (grants, policies, functions, triggers) is left to PostgreSQL.
///
/// On SQLite: `public.` names lose their schema and other schemas' become `schema_table` (the platform's
/// `auth_users`); UUIDs and times are TEXT, bigints INTEGER (an identity `INTEGER PRIMARY KEY
/// AUTOINCREMENT`), doubles REAL; a default the database computes (`auth.now()`, `gen_random_uuid()`) is
/// the store's to fill (`Schema.Default`), a constant stays in the DDL; `CHECK` and `REFERENCES` are kept
/// as written, casts (`::text`) dropped. Every statement is idempotent (`IF NOT EXISTS`).
struct SQLTables: Sendable {
    var schema: Schema
    /// The SQLite DDL, statement by statement.
    var sqlite: [String]

    struct Failure: Error, CustomStringConvertible {
        var statement: String
        var reason: String
        var description: String { "\(reason), in: \(statement.prefix(120))" }
    }

    /// The tables of an app's PostgreSQL files (in the bundle folder `folder`), in order.
    static func read(folder: String, files: [String]) throws -> SQLTables {
        try SQLTables(script: script(folder: folder, files: files))
    }

    /// An app's PostgreSQL files as one script.
    static func script(folder: String, files: [String]) throws -> String {
        try files.map { try Migrations.resource($0, folder: folder) }.joined(separator: "\n")
    }

    /// An app's row-level security, read from its files (`SQLPolicies`), with the guards its PL/pgSQL triggers keep.
    static func policies(folder: String, files: [String], schema: Schema, guards: [String: Policies.Guard]) -> Policies {
        do {
            return try SQLPolicies.read(script: script(folder: folder, files: files), schema: schema, guards: guards)
        } catch {
            preconditionFailure("\(folder): the app's SQL has a policy the SQLite store cannot read: \(error)")
        }
    }

    /// An app's own tables, as its server kind declares them: the build's SQL, which `SQLTablesTests` reads for
    /// every app, so a table it cannot read fails the tests rather than a start.
    static func app(folder: String, files: [String]) -> SQLTables {
        do {
            return try read(folder: folder, files: files)
        } catch {
            preconditionFailure("\(folder): the app's SQL has a table the SQLite store cannot serve: \(error)")
        }
    }

    /// The DDL as one script (a migration's SQL).
    var sqliteScript: String { sqlite.joined(separator: ";\n") + ";" }

    init(schema: Schema, sqlite: [String]) { (self.schema, self.sqlite) = (schema, sqlite) }

    init(script: String) throws(Failure) {
        var tables: [String: Schema.Table] = [:]
        var sqlite: [String] = []
        for statement in SQLStatements.split(script) {
            let words = SQLTokens(statement)
            if words.starts(with: ["CREATE", "TABLE"]) {
                let (table, ddl) = try Self.table(words, statement)
                tables[table.name] = table
                sqlite.append(ddl)
            } else if words.starts(with: ["CREATE", "INDEX"]) || words.starts(with: ["CREATE", "UNIQUE", "INDEX"]) {
                sqlite.append(Self.sqliteText(words.tokens, ifNotExists: true))
            }
        }
        schema = Schema(tables: tables)
        self.sqlite = sqlite
    }

    // MARK: - CREATE TABLE

    private static func table(_ words: SQLTokens, _ statement: String) throws(Failure) -> (Schema.Table, String) {
        var t = words.tokens
        func fail(_ why: String) -> Failure { Failure(statement: statement, reason: why) }
        t.removeFirst(2)
        if t.count > 3, t[0].upper == "IF", t[1].upper == "NOT", t[2].upper == "EXISTS" { t.removeFirst(3) }
        guard let nameToken = t.first, let open = t.firstIndex(where: { $0.text == "(" }), open == 1,
              let close = SQLTokens.matching(t, open), close == t.count - 1
        else { throw fail("not a CREATE TABLE name (…) statement") }
        let name = sqliteName(nameToken.text)
        var columns: [Schema.Column] = []
        var primaryKey: String?
        var unique: Set<String> = []
        var sqliteParts: [String] = []
        for element in SQLTokens.splitTopLevel(Array(t[(open + 1)..<close])) {
            guard let head = element.first else { continue }
            switch head.upper {
            case "CHECK", "UNIQUE", "PRIMARY", "FOREIGN", "CONSTRAINT":
                let inner = SQLTokens.parenthesized(element).map { $0.map(\.text) } ?? []
                if head.upper == "UNIQUE", inner.count == 1 { unique.insert(SQLTokens.unquote(inner[0])) }
                if head.upper == "PRIMARY", inner.count == 1 { primaryKey = SQLTokens.unquote(inner[0]) }
                sqliteParts.append(sqliteText(element))
            default:
                let (column, isKey, isUnique, ddl) = try Self.column(element, fail)
                columns.append(column)
                if isKey { primaryKey = column.name }
                if isUnique { unique.insert(column.name) }
                sqliteParts.append(ddl)
            }
        }
        guard let primaryKey else { throw fail("table \(name) has no single-column primary key (the REST layer needs one)") }
        let ddl = "CREATE TABLE IF NOT EXISTS \(name) (\n  " + sqliteParts.joined(separator: ",\n  ") + ")"
        return (Schema.Table(name: name, columns: columns, primaryKey: primaryKey, unique: unique), ddl)
    }

    /// One column: its name, type and constraints, read into `Schema.Column` and written for SQLite.
    private static func column(_ e: [SQLToken], _ fail: (String) -> Failure) throws(Failure)
        -> (Schema.Column, key: Bool, unique: Bool, ddl: String) {
        let name = SQLTokens.unquote(e[0].text)
        var i = 1
        let type: Schema.ColumnType, sqliteType: String
        switch (e.count > 1 ? e[1].upper : "", e.count > 2 ? e[2].upper : "") {
        case ("UUID", _): (type, sqliteType, i) = (.uuid, "TEXT", 2)
        case ("TEXT", _): (type, sqliteType, i) = (.text, "TEXT", 2)
        case ("BIGINT", _): (type, sqliteType, i) = (.bigint, "INTEGER", 2)
        case ("TIMESTAMPTZ", _): (type, sqliteType, i) = (.timestamptz, "TEXT", 2)
        case ("DOUBLE", "PRECISION"): (type, sqliteType, i) = (.double, "REAL", 3)
        default: throw fail("column \(name): type \(e.count > 1 ? e[1].text : "none") is not one the SQLite store serves")
        }
        var nullable = true, key = false, isUnique = false, identity = false
        var defaultValue: Schema.Default?
        var parts: [String] = []
        while i < e.count {
            let word = e[i].upper
            switch word {
            case "NOT" where i + 1 < e.count && e[i + 1].upper == "NULL":
                nullable = false
                parts.append("NOT NULL")
                i += 2
            case "NULL":
                i += 1
            case "PRIMARY" where i + 1 < e.count && e[i + 1].upper == "KEY":
                key = true
                nullable = false
                i += 2
            case "UNIQUE":
                isUnique = true
                parts.append("UNIQUE")
                i += 1
            case "GENERATED":
                // GENERATED ALWAYS AS IDENTITY
                guard i + 3 < e.count, e[i + 1].upper == "ALWAYS", e[i + 2].upper == "AS", e[i + 3].upper == "IDENTITY" else {
                    throw fail("column \(name): only GENERATED ALWAYS AS IDENTITY is read")
                }
                identity = true
                defaultValue = .identity
                i += 4
            case "DEFAULT":
                let (value, end) = SQLTokens.expression(e, from: i + 1)
                let text = value.map(\.text).joined()
                switch text.lowercased() {
                case "auth.now()", "now()", "current_timestamp": defaultValue = .now
                case "gen_random_uuid()": defaultValue = .uuid
                default:
                    if value.count == 1, let literal = SQLTokens.stringLiteral(value[0].text) {
                        defaultValue = .value(literal)
                        parts.append("DEFAULT " + value[0].text)
                    } else if value.count == 1, value[0].isNumber {
                        defaultValue = .value(value[0].text)
                        parts.append("DEFAULT " + value[0].text)
                    } else {
                        defaultValue = .database
                        parts.append("DEFAULT (" + sqliteText(value) + ")")
                    }
                }
                i = end
            case "REFERENCES", "CHECK":
                let (clause, end) = SQLTokens.constraint(e, from: i)
                parts.append(sqliteText(clause))
                i = end
            default:
                throw fail("column \(name): \(e[i].text) is not read here")
            }
        }
        var head = Schema.quote(name) == "\"\(name)\"" ? name : Schema.quote(name)
        head += " " + (identity ? "INTEGER" : sqliteType)
        if key { head += identity ? " PRIMARY KEY AUTOINCREMENT" : " PRIMARY KEY" }
        let ddl = ([head] + parts.filter { !(key && $0 == "NOT NULL") }).joined(separator: " ")
        return (Schema.Column(name: name, type: type, nullable: nullable, defaultValue: defaultValue), key, isUnique, ddl)
    }

    // MARK: - Names and text

    /// `public.users` → `users`; `auth.users` → `auth_users` (the platform's schemas); `o.id` (an alias's column) as it is.
    static func sqliteName(_ qualified: String) -> String {
        let parts = qualified.split(separator: ".", maxSplits: 1).map { SQLTokens.unquote(String($0)) }
        guard parts.count == 2 else { return parts.first ?? qualified }
        switch parts[0] {
        case "public": return parts[1]
        case "auth", "storage", "realtime": return parts[0] + "_" + parts[1]
        default: return qualified
        }
    }

    /// Tokens written back for SQLite: qualified names mapped, casts dropped, `IF NOT EXISTS` added to an index.
    static func sqliteText(_ tokens: [SQLToken], ifNotExists: Bool = false) -> String {
        var out = ""
        var i = 0
        var previous: SQLToken?
        while i < tokens.count {
            var tok = tokens[i]
            if tok.text == "::" {
                i += 2  // the cast and its type name
                if i < tokens.count, tokens[i].text == "[" { i += 2 }  // text[]
                continue
            }
            if tok.isWord, tok.text.contains(".") { tok = SQLToken(text: sqliteName(tok.text), kind: .word) }
            if let p = previous, SQLToken.spaced(p, tok) { out += " " }
            out += tok.text
            if ifNotExists, tok.upper == "INDEX", i + 1 < tokens.count, tokens[i + 1].upper != "IF" { out += " IF NOT EXISTS" }
            previous = tok
            i += 1
        }
        return out
    }
}
