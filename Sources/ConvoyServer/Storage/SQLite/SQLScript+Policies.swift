import GRDB

/// An app's row-level security read from its PostgreSQL script for the SQLite store, so its policies are written
/// once (docs/architecture.md, "One server per app"). Read: `CREATE POLICY … ON public.t FOR cmd TO authenticated
/// USING (…) WITH CHECK (…)` in order, a later `DROP POLICY IF EXISTS` taking one away (a choice file such as Green
/// Box's `002_strict_policies.sql` replaces a policy that way), and the app's `LANGUAGE sql` functions, which a
/// policy's expression calls and which are inlined (their bodies are one `SELECT`). An expression is written for
/// SQLite: `auth.uid()` becomes a parameter bound to the caller, `public.` names lose their schema, casts go,
/// `x = ANY (ARRAY[…])` becomes `x IN (…)`. Permissive policies of one command are ORed, as PostgreSQL does.
///
/// `USING` becomes the `Predicate` each read, update and delete adds to its `WHERE`; `WITH CHECK` (and a SELECT
/// policy asked of one row: `readable`, what Realtime checks per subscriber) is evaluated over the row as a
/// one-row table (`SELECT EXISTS (SELECT 1 FROM (SELECT ? AS c1, …) AS _rls_row WHERE …)`), so its bare column
/// names are the row's and a subquery's own columns shadow them, as in PostgreSQL. A column of the policy's row
/// given to a helper is named `_rls_row.c` inside the helper's subquery, which may read the policy's own table
/// (its name would be the subquery's there); a `WHERE` predicate that does so reaches its row through
/// `EXISTS (SELECT 1 FROM t AS _rls_row WHERE _rls_row.rowid = t.rowid AND …)`. What PL/pgSQL
/// triggers do (a guard on which columns may change) the app gives in Swift (`guards`); policies on other schemas
/// (`realtime.messages`) are the app's `realtimeAllows`.
enum SQLPolicies {
    /// The name a policy's row goes by where a helper's subquery could shadow its table's own name (a policy on
    /// `operation_members` calling `is_operation_member(operation_id)`, whose body reads `operation_members`).
    static let row = "\"_rls_row\""

    /// One policy's expression, written for SQLite, with how many caller ids it binds. `correlated`: it names the
    /// policy's row as `_rls_row` (a helper was given one of its columns).
    struct Expression: Sendable {
        var sql: String
        var uids: Int
        var correlated = false

        /// The expression as a `WHERE` predicate on `table` (unaliased in the query that adds it).
        func predicate(_ uid: String, table: String) -> Policies.Predicate {
            let arguments = Array(repeating: uid.databaseValue, count: uids)
            guard correlated else { return Policies.Predicate(sql: "(\(sql))", arguments: arguments) }
            let t = Schema.quote(table)
            return Policies.Predicate(sql: "EXISTS (SELECT 1 FROM \(t) AS \(SQLPolicies.row) WHERE \(SQLPolicies.row).rowid = \(t).rowid AND (\(sql)))",
                                      arguments: arguments)
        }

        static func or(_ all: [Expression]) -> Expression? {
            guard !all.isEmpty else { return nil }
            return Expression(sql: all.map { "(\($0.sql))" }.joined(separator: " OR "), uids: all.reduce(0) { $0 + $1.uids },
                              correlated: all.contains(where: \.correlated))
        }
    }

    struct Policy {
        var name: String, table: String, command: String
        var using: Expression?, check: Expression?
    }

    static func read(script: String, schema: Schema, guards: [String: Policies.Guard] = [:]) throws(SQLTables.Failure) -> Policies {
        var functions: [String: (params: [String], body: [SQLToken])] = [:]
        var policies: [Policy] = []
        for statement in SQLStatements.split(script) {
            let t = SQLTokens(statement)
            if let f = sqlFunction(t.tokens) {
                functions[f.name] = (f.params, f.body)
            } else if t.starts(with: ["DROP", "POLICY"]) {
                let words = t.tokens.map(\.upper)
                guard let on = words.firstIndex(of: "ON"), on > 2, on + 1 < words.count else { continue }
                let name = t.tokens[on - 1].text, table = SQLTables.sqliteName(t.tokens[on + 1].text)
                policies.removeAll { $0.name == name && $0.table == table }
            } else if t.starts(with: ["CREATE", "POLICY"]) {
                guard let p = try policy(t.tokens, statement, functions, schema) else { continue }
                policies.removeAll { $0.name == p.name && $0.table == p.table }
                policies.append(p)
            }
        }
        var tables: [String: Policies.Table] = [:]
        for (name, table) in schema.tables {
            func expressions(_ command: String, _ part: KeyPath<Policy, Expression?>) -> Expression? {
                .or(policies.filter { $0.table == name && ($0.command == command || $0.command == "ALL") }.compactMap { $0[keyPath: part] })
            }
            let select = expressions("SELECT", \.using)
            // FOR ALL with USING alone checks new rows with it too (PostgreSQL's rule); FOR INSERT has no USING.
            let insert = Expression.or(policies.filter { $0.table == name && ($0.command == "INSERT" || $0.command == "ALL") }
                .compactMap { $0.check ?? $0.using })
            let updateUsing = expressions("UPDATE", \.using)
            // An UPDATE policy without WITH CHECK checks the new row with its USING.
            let updateCheck = Expression.or(policies.filter { $0.table == name && ($0.command == "UPDATE" || $0.command == "ALL") }
                .compactMap { $0.check ?? $0.using })
            let delete = expressions("DELETE", \.using)
            let columns = table.columns.map(\.name)
            let textColumns = Set(table.columns.filter { $0.type == .uuid || $0.type == .text }.map(\.name))
            var p = Policies.Table(select: nil, insert: nil, update: nil, delete: nil)
            if let select {
                p.select = { uid in select.predicate(uid, table: name) }
                p.readable = rowCheck(select, table: name, columns: columns, textColumns: textColumns)
            }
            if let insert { p.insert = rowCheck(insert, table: name, columns: columns, textColumns: textColumns) }
            if let updateUsing {
                let using: @Sendable (String) -> Policies.Predicate = { uid in updateUsing.predicate(uid, table: name) }
                p.update = (using: using, check: rowCheck(updateCheck ?? updateUsing, table: name, columns: columns, textColumns: textColumns), guard: guards[name])
            }
            if let delete { p.delete = { uid in delete.predicate(uid, table: name) } }
            tables[name] = p
        }
        return Policies(tables: tables)
    }

    /// `e` over one row held in memory: the row as a one-row table (`_rls_row`); an expression of comparisons
    /// with the caller and constants only is decided in Swift (`Comparisons`), without a statement.
    static func rowCheck(_ e: Expression, table: String, columns: [String], textColumns: Set<String> = []) -> Policies.Check {
        if let fast = Comparisons(e.sql, columns: textColumns) {
            return { values, uid, _ in fast.holds(values, uid) }
        }
        let row = columns.map { "? AS \(Schema.quote($0))" }.joined(separator: ", ")
        let sql = "SELECT EXISTS (SELECT 1 FROM (SELECT \(row)) AS \(SQLPolicies.row) WHERE \(e.sql))"
        return { values, uid, db in
            var arguments = columns.map { values[$0] ?? .null }
            arguments += Array(repeating: uid.databaseValue, count: e.uids)
            return try Bool.fetchOne(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments)) ?? false
        }
    }

    // MARK: - Reading

    /// `CREATE [OR REPLACE] FUNCTION public.f(a type, …) RETURNS … LANGUAGE sql … AS $$ SELECT … $$`: its head, its
    /// SQLite name, the names of its inputs and its body's tokens.
    static func sqlFunction(_ t: [SQLToken]) -> (head: SQLFunctionHead, name: String, params: [String], body: [SQLToken])? {
        guard let head = SQLFunctionHead(t),
              let language = t[head.close...].firstIndex(where: { $0.upper == "LANGUAGE" }), language + 1 < t.count, t[language + 1].upper == "SQL",
              let body = t.last(where: { $0.kind == .string && $0.text.hasPrefix("$") })
        else { return nil }
        var text = body.text
        guard let open = text.dropFirst().firstIndex(of: "$") else { return nil }
        let tag = text[text.startIndex...open]
        text = String(text.dropFirst(tag.count).dropLast(tag.count))
        var tokens = SQLTokens(text).tokens
        while tokens.last?.text == ";" { tokens.removeLast() }
        return (head, SQLTables.sqliteName(head.qualified), head.inputs.compactMap(\.name), tokens)
    }

    /// `CREATE POLICY name ON public.t [AS PERMISSIVE] [FOR cmd] [TO roles] [USING (…)] [WITH CHECK (…)]`; nil for a
    /// policy SQLite has no table for (another schema's) or that no signed-in user is given.
    static func policy(_ t: [SQLToken], _ statement: String, _ functions: [String: (params: [String], body: [SQLToken])],
                       _ schema: Schema) throws(SQLTables.Failure) -> Policy? {
        func fail(_ why: String) -> SQLTables.Failure { SQLTables.Failure(statement: statement, reason: why) }
        guard t.count > 4, t[3].upper == "ON" else { throw fail("not a CREATE POLICY name ON table statement") }
        let qualified = t[4].text
        guard !qualified.contains(".") || qualified.hasPrefix("public.") || qualified == realtimeMessages else { return nil }
        var p = Policy(name: t[2].text, table: SQLTables.sqliteName(qualified), command: "ALL")
        var roles: [String] = ["PUBLIC"]
        var i = 5
        while i < t.count {
            switch t[i].upper {
            case "AS":
                guard i + 1 < t.count, t[i + 1].upper == "PERMISSIVE" else { throw fail("only permissive policies are read") }
                i += 2
            case "FOR":
                guard i + 1 < t.count else { throw fail("FOR without a command") }
                p.command = t[i + 1].upper
                i += 2
            case "TO":
                roles = []
                i += 1
                while i < t.count, t[i].isWord, !["USING", "WITH"].contains(t[i].upper) {
                    roles.append(t[i].text.lowercased())
                    i += 1
                    if i < t.count, t[i].text == "," { i += 1 }
                }
            case "USING", "WITH":
                let isCheck = t[i].upper == "WITH"
                let open = i + (isCheck ? 2 : 1)
                guard open < t.count, t[open].text == "(", let close = SQLTokens.matching(t, open) else {
                    throw fail("\(isCheck ? "WITH CHECK" : "USING") needs a parenthesised expression")
                }
                let columns = Set(schema.tables[p.table]?.columns.map(\.name) ?? [])
                let e = try expression(Array(t[(open + 1)..<close]), functions, fail, scope: (p.table, columns))
                if isCheck { p.check = e } else { p.using = e }
                i = close + 1
            default:
                throw fail("\(t[i].text) is not read in a policy")
            }
        }
        guard roles.contains("authenticated") || roles.contains("PUBLIC") || roles.contains("public") else { return nil }
        return p
    }

    /// An expression written for SQLite (`auth.uid()` a parameter, helpers inlined).
    /// `scope`: the policy's table and its columns. An argument given to a helper names the table's columns from
    /// the policy's scope; inlined into the helper's subquery, a bare name would be the subquery's own
    /// (`operation_id = op` with `op` := `operation_id`), so the table's columns in it are qualified with its name.
    static func expression(_ tokens: [SQLToken], _ functions: [String: (params: [String], body: [SQLToken])],
                           _ fail: (String) -> SQLTables.Failure, scope: (table: String, columns: Set<String>)? = nil,
                           depth: Int = 0) throws(SQLTables.Failure) -> Expression {
        guard depth < 8 else { throw fail("SQL helpers nested more than 8 deep") }
        var out: [SQLToken] = []
        var uids = 0
        var correlated = false
        var i = 0
        while i < tokens.count {
            let tok = tokens[i]
            let next = i + 1 < tokens.count ? tokens[i + 1].text : ""
            if tok.isWord, next == "(", let close = SQLTokens.matching(tokens, i + 1) {
                let name = tok.text.lowercased()
                if name == "realtime.topic", close == i + 2 {
                    // The channel's name: the row's topic (`realtime.messages` is the policy's table, one row in memory).
                    out.append(SQLToken(text: SQLPolicies.row + ".\"topic\"", kind: .quoted))
                    i = close + 1
                    continue
                }
                if name == "auth.uid", close == i + 2 {
                    out.append(SQLToken(text: "?", kind: .symbol))
                    uids += 1
                    i = close + 1
                    continue
                }
                if let f = functions[SQLTables.sqliteName(name)] {
                    let args = SQLTokens.splitTopLevel(Array(tokens[(i + 2)..<close])).map { arg in
                        arg.enumerated().map { k, a -> SQLToken in
                            guard let scope, a.isWord, scope.columns.contains(a.text), k + 1 == arg.count || arg[k + 1].text != "(" else { return a }
                            correlated = true
                            return SQLToken(text: SQLPolicies.row + "." + Schema.quote(a.text), kind: .quoted)
                        }
                    }
                    guard args.count == f.params.count else { throw fail("\(tok.text) takes \(f.params.count) arguments") }
                    // Each argument in parentheses where its parameter stood, then the body written as any expression.
                    var body: [SQLToken] = []
                    for b in f.body {
                        if b.isWord, let k = f.params.firstIndex(where: { $0.lowercased() == b.text.lowercased() }) {
                            body.append(SQLToken(text: "(", kind: .symbol))
                            body += args[k]
                            body.append(SQLToken(text: ")", kind: .symbol))
                        } else {
                            body.append(b)
                        }
                    }
                    let inner = try expression(body, functions, fail, depth: depth + 1)
                    correlated = correlated || inner.correlated
                    out.append(SQLToken(text: "(", kind: .symbol))
                    out += SQLTokens(inner.sql).tokens
                    out.append(SQLToken(text: ")", kind: .symbol))
                    uids += inner.uids
                    i = close + 1
                    continue
                }
            }
            // `= ANY (ARRAY[a, b])` (also `= ANY ((ARRAY[a, b]))`, as an inlined argument reads) → `IN (a, b)`.
            if tok.text == "=", next.uppercased() == "ANY", i + 2 < tokens.count, tokens[i + 2].text == "(",
               let close = SQLTokens.matching(tokens, i + 2) {
                var inner = Array(tokens[(i + 3)..<close])
                while inner.first?.text == "(", inner.last?.text == ")", SQLTokens.matching(inner, 0) == inner.count - 1 {
                    inner = Array(inner.dropFirst().dropLast())
                }
                guard inner.count >= 3, inner[0].upper == "ARRAY", inner[1].text == "[", inner.last?.text == "]" else {
                    throw fail("= ANY (…) is read over an ARRAY[…] only")
                }
                out.append(SQLToken(text: "IN", kind: .word))
                out.append(SQLToken(text: "(", kind: .symbol))
                out += inner[2..<(inner.count - 1)]
                out.append(SQLToken(text: ")", kind: .symbol))
                i = close + 1
                continue
            }
            if tok.isWord, let column = Self.messagesColumn(tok.text) {
                out.append(SQLToken(text: SQLPolicies.row + "." + Schema.quote(column), kind: .quoted))
                i += 1
                continue
            }
            if tok.upper == "ARRAY" { throw fail("an ARRAY outside = ANY (…) has no SQLite form") }
            if tok.kind == .string, tok.text.hasPrefix("$") { throw fail("a dollar-quoted string in a policy") }
            out.append(tok)
            i += 1
        }
        return Expression(sql: SQLTables.sqliteText(out), uids: uids, correlated: correlated)
    }
}

extension SQLPolicies {
    /// Realtime Authorization's table (`realtime.messages`): its policies decide who joins, sends and tracks on a private
    /// channel. The SQLite store has no such table; its policies are read over one row in memory (`realtimeTable`),
    /// the channel's topic and the extension asked about, `realtime.topic()` that row's topic.
    static let realtimeMessages = "realtime.messages"
    static let realtimeTable = SQLTables.sqliteName(realtimeMessages)

    /// The schema a policy script is read against, with `realtime.messages` as its two columns that policies read.
    static func withRealtimeMessages(_ schema: Schema) -> Schema {
        var tables = schema.tables
        tables[realtimeTable] = Schema.Table(name: realtimeTable, columns: [Schema.Column(name: "topic", type: .text), Schema.Column(name: "extension", type: .text)],
                                             primaryKey: "topic")
        return Schema(tables: tables)
    }

    /// `realtime.messages.extension`, `messages.topic`: the in-memory row's column a policy on `realtime.messages` names.
    static func messagesColumn(_ word: String) -> String? {
        let parts = word.lowercased().split(separator: ".").map(String.init)
        guard parts.count >= 2, let column = parts.last, column == "topic" || column == "extension" else { return nil }
        let table = parts.dropLast().joined(separator: ".")
        return table == "messages" || table == realtimeMessages ? column : nil
    }
}

/// A policy expression that is only ANDed comparisons of the row's columns with the caller or a constant
/// (`sender_id = ?`, `? IN (user_id_1, user_id_2)`, `status = 'pending'`, `true`), decided in Swift: the SQL-read
/// policy then costs what the hand-written closure did on the write and Realtime paths (docs/performance.md). Any
/// other expression (a subquery, `OR`, `IS NULL`, a `CASE`) is nil here and evaluated by SQLite.
struct Comparisons: Sendable {
    enum Term: Sendable { case column(String), caller, text(String) }
    /// Each conjunct: the left term is one of the right terms.
    var conjuncts: [(Term, [Term])]

    /// `columns`: the ones compared as text (uuid and text columns); any other column leaves the expression to SQLite.
    init?(_ sql: String, columns: Set<String>) {
        var tokens = SQLTokens(sql).tokens
        while tokens.first?.text == "(", tokens.last?.text == ")", SQLTokens.matching(tokens, 0) == tokens.count - 1 {
            tokens = Array(tokens.dropFirst().dropLast())
        }
        if tokens.count == 1, tokens[0].upper == "TRUE" {
            conjuncts = []
            return
        }
        func term(_ t: SQLToken) -> Term? {
            if t.text == "?" { return .caller }
            if t.isWord, columns.contains(t.text) { return .column(t.text) }
            if t.kind == .quoted, columns.contains(SQLTokens.unquote(t.text)) { return .column(SQLTokens.unquote(t.text)) }
            return SQLTokens.stringLiteral(t.text).map(Term.text)
        }
        var out: [(Term, [Term])] = []
        var i = 0
        while i < tokens.count {
            guard let left = term(tokens[i]), i + 2 < tokens.count else { return nil }
            if tokens[i + 1].text == "=", let right = term(tokens[i + 2]) {
                out.append((left, [right]))
                i += 3
            } else if tokens[i + 1].upper == "IN", tokens[i + 2].text == "(", let close = SQLTokens.matching(tokens, i + 2) {
                var options: [Term] = []
                for t in tokens[(i + 3)..<close] where t.text != "," {
                    guard let o = term(t) else { return nil }
                    options.append(o)
                }
                out.append((left, options))
                i = close + 1
            } else {
                return nil
            }
            if i < tokens.count {
                guard tokens[i].upper == "AND" else { return nil }
                i += 1
            }
        }
        conjuncts = out
    }

    /// As SQL decides it: a comparison with NULL is not true.
    func holds(_ row: Policies.Row, _ uid: String) -> Bool {
        func value(_ t: Term) -> String? {
            switch t {
            case .caller: uid
            case .text(let s): s
            case .column(let c): row[c].flatMap { String.fromDatabaseValue($0) }
            }
        }
        return conjuncts.allSatisfy { left, options in
            guard let l = value(left) else { return false }
            return options.contains { value($0) == l }
        }
    }
}
