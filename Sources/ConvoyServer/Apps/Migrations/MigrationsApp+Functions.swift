import ConvoyJSON
import Foundation
import GRDB

/// A migrations folder's `LANGUAGE sql` functions as RPCs on SQLite: the body (one `SELECT`) written for SQLite as a
/// policy's helpers are (`SQLPolicies.expression`: `auth.uid()` the caller, other helpers inlined), each argument a
/// literal where its parameter stood (an array argument an `ARRAY[…]`, so `= ANY (ids)` reads as `IN (…)`), run as
/// `SECURITY DEFINER` runs (without row-level security). It answers as PostgREST does: one value in the type the
/// function returns; for `RETURNS SETOF <table>` or `RETURNS TABLE (…)` an array of its rows as objects; for
/// `RETURNS SETOF <type>` an array of values. A `SECURITY INVOKER` function that reads a table would answer otherwise
/// than PostgreSQL (which applies the caller's policies inside it) and is refused at start.
struct SQLFunction: Sendable {
    var name: String
    var params: [String]
    var body: [SQLToken]
    var returns: Returns
    /// Each parameter's type as its head writes it (`uuid`, `uuid[]`, `text`), lowercased, by lowercased name.
    var types: [String: String] = [:]

    enum Returns: Sendable, Equatable {
        /// One value of this type: `boolean`, a number type, or text (uuid, text, timestamptz).
        case value(String)
        /// `SETOF <type>`: an array of values of it.
        case values(String)
        /// `SETOF <table>`, `TABLE (…)`: an array of rows, each an object of the columns the body selects.
        case rows
    }

    enum Failure: Error { case invoker, writes(String) }

    /// The types a `SETOF` names that are values, not a table's rows.
    static let valueTypes: Set<String> = ["boolean", "bool", "bigint", "integer", "int", "smallint", "double", "numeric", "real",
                                          "text", "uuid", "timestamptz", "timestamp", "date", "varchar", "jsonb", "json"]

    /// The functions of `script` (every `CREATE FUNCTION … LANGUAGE sql`), by name.
    static func read(_ script: String) throws(Failure) -> [String: SQLFunction] {
        var out: [String: SQLFunction] = [:]
        for statement in SQLStatements.split(script) {
            let t = SQLTokens(statement)
            guard let f = SQLPolicies.sqlFunction(t.tokens) else { continue }
            let words = t.tokens.map(\.upper)
            guard let r = words.firstIndex(of: "RETURNS"), r + 1 < words.count else { continue }
            let returns: Returns
            switch words[r + 1] {
            case "TABLE": returns = .rows
            case "SETOF":
                guard r + 2 < words.count else { continue }
                let type = words[r + 2].lowercased()
                returns = valueTypes.contains(type) ? .values(type) : .rows
            default: returns = .value(words[r + 1].lowercased())
            }
            // A body that writes (INSERT, UPDATE, DELETE) would run in the store's read pool and fail at its first call.
            guard f.body.first?.upper == "SELECT" else { throw .writes(f.name) }
            let definer = words.contains("DEFINER")
            if !definer, f.body.contains(where: { $0.upper == "FROM" }) { throw .invoker }
            out[f.name] = SQLFunction(name: f.name, params: f.params, body: f.body, returns: returns, types: Self.types(f.head))
        }
        return out
    }

    /// The types of a head's named inputs, by name.
    static func types(_ head: SQLFunctionHead) -> [String: String] {
        Dictionary(head.inputs.compactMap { p in p.name.map { ($0, p.type) } }, uniquingKeysWith: { a, _ in a })
    }

    /// A `uuid` (or `uuid[]`) argument read as PostgreSQL's `uuid_in` reads it, into its canonical form: a uuid in
    /// braces or without hyphens finds its row as on PostgreSQL; one that is no uuid is 400 22P02.
    func typed(_ args: [String: JSONValue]) throws(APIError) -> [String: JSONValue] {
        var out = args
        func uuid(_ v: JSONValue) throws(APIError) -> JSONValue {
            guard case .string(let s) = v else { return v }
            guard let u = Values.uuid(s) else { throw Values.invalid(Schema.Column(name: "", type: .uuid), s) }
            return .string(u)
        }
        for (name, value) in args {
            switch types[name] {
            case "uuid"?: out[name] = try uuid(value)
            case "uuid[]"?:
                guard case .array(let items) = value else { continue }
                var converted: [JSONValue] = []
                for item in items { converted.append(try uuid(item)) }
                out[name] = .array(converted)
            default: continue
            }
        }
        return out
    }

    /// The call with `args` (named as its parameters) by `who`; nil when the arguments are not its parameters
    /// (PostgREST then finds no such function: 404).
    func call(_ args: [String: JSONValue], as who: Principal, functions: [String: SQLFunction], in db: Database) throws -> JSONValue? {
        guard Set(args.keys) == Set(params.map { $0.lowercased() }) else { return nil }
        let args = try typed(args)
        var body: [SQLToken] = []
        for b in self.body {
            if b.isWord, let p = params.first(where: { $0.lowercased() == b.text.lowercased() }), let v = args[p.lowercased()] {
                body += Self.tokens(v)
            } else {
                body.append(b)
            }
        }
        let helpers = functions.mapValues { (params: $0.params, body: $0.body) }
        let e = try SQLPolicies.expression(body, helpers, { SQLTables.Failure(statement: name, reason: $0) })
        let arguments = StatementArguments(Array(repeating: who.userID ?? "", count: e.uids))
        switch returns {
        case .value(let type):
            guard let value = try Row.fetchOne(db, sql: e.sql, arguments: arguments)?.databaseValues.first else { return .null }
            return Self.json(value, type)
        case .values(let type):
            return .array(try Row.fetchAll(db, sql: e.sql, arguments: arguments).map { Self.json($0.databaseValues.first ?? .null, type) })
        case .rows:
            return .array(try Row.fetchAll(db, sql: e.sql, arguments: arguments).map { row in
                .object(zip(row.columnNames, row.databaseValues).map { JSONValue.Member($0, Values.toJSON($1)) })
            })
        }
    }

    /// A stored value as JSON of the function's return type.
    static func json(_ value: DatabaseValue, _ type: String) -> JSONValue {
        if value.isNull { return .null }
        switch type {
        case "boolean", "bool": return .bool((Int64.fromDatabaseValue(value) ?? 0) != 0)
        case "bigint", "integer", "int", "smallint", "double", "numeric", "real":
            // An integer as itself, a double whole (GRDB's Int64 reading would cut 46.05 to 46).
            if case .int64(let i) = value.storage { return .number(String(i)) }
            let d = Double.fromDatabaseValue(value) ?? 0
            return Int64(exactly: d).map { .number(String($0)) } ?? .number(String(d))
        default: return .string(String.fromDatabaseValue(value) ?? "")
        }
    }

    /// A JSON argument as the tokens that stand where its parameter stood: a literal, or `ARRAY[…]` of literals.
    static func tokens(_ v: JSONValue) -> [SQLToken] {
        guard case .array(let items) = v else { return [SQLToken(text: literal(v), kind: .string)] }
        var out = [SQLToken(text: "ARRAY", kind: .word), SQLToken(text: "[", kind: .symbol)]
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(SQLToken(text: ",", kind: .symbol)) }
            out.append(SQLToken(text: literal(item), kind: .string))
        }
        out.append(SQLToken(text: "]", kind: .symbol))
        return out
    }

    /// A JSON argument as an SQL literal (strings quoted, quotes doubled).
    static func literal(_ v: JSONValue) -> String {
        switch v {
        case .null: "NULL"
        case .bool(let b): b ? "1" : "0"
        case .number(let n): n
        case .string(let s): "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
        case .array, .object: "'" + v.text.replacingOccurrences(of: "'", with: "''") + "'"
        }
    }
}
