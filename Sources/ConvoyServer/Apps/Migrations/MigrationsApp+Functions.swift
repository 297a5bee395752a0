import ConvoyJSON
import Foundation
import GRDB

/// A migrations folder's `LANGUAGE sql` functions as RPCs on SQLite: the body (one `SELECT`) written for SQLite as a
/// policy's helpers are (`SQLPolicies.expression`: `auth.uid()` the caller, other helpers inlined), each argument a
/// literal where its parameter stood, run as `SECURITY DEFINER` runs (without row-level security), and its one value
/// answered in the type the function returns. A `SECURITY INVOKER` function that reads a table would answer otherwise
/// than PostgreSQL (which applies the caller's policies inside it) and is refused at start.
struct SQLFunction: Sendable {
    var name: String
    var params: [String]
    var body: [SQLToken]
    /// What it returns: `boolean`, a number type, or text (uuid, text, timestamptz).
    var returns: String

    enum Failure: Error { case invoker, returnsSet(String) }

    /// The functions of `script` (every `CREATE FUNCTION … LANGUAGE sql`), by name.
    static func read(_ script: String) throws(Failure) -> [String: SQLFunction] {
        var out: [String: SQLFunction] = [:]
        for statement in SQLStatements.split(script) {
            let t = SQLTokens(statement)
            guard t.starts(with: ["CREATE", "OR", "REPLACE", "FUNCTION"]) || t.starts(with: ["CREATE", "FUNCTION"]),
                  let f = SQLPolicies.sqlFunction(t.tokens) else { continue }
            let words = t.tokens.map(\.upper)
            guard let r = words.firstIndex(of: "RETURNS"), r + 1 < words.count else { continue }
            if ["SETOF", "TABLE"].contains(words[r + 1]) { throw .returnsSet(f.name) }
            let definer = words.contains("DEFINER")
            if !definer, f.body.contains(where: { $0.upper == "FROM" }) { throw .invoker }
            out[f.name] = SQLFunction(name: f.name, params: f.params, body: f.body, returns: words[r + 1].lowercased())
        }
        return out
    }

    /// The call with `args` (named as its parameters) by `who`; nil when the arguments are not its parameters
    /// (PostgREST then finds no such function: 404).
    func call(_ args: [String: JSONValue], as who: Principal, functions: [String: SQLFunction], in db: Database) throws -> JSONValue? {
        guard Set(args.keys) == Set(params.map { $0.lowercased() }) else { return nil }
        var body: [SQLToken] = []
        for b in self.body {
            if b.isWord, let p = params.first(where: { $0.lowercased() == b.text.lowercased() }), let v = args[p.lowercased()] {
                body.append(SQLToken(text: Self.literal(v), kind: .string))
            } else {
                body.append(b)
            }
        }
        let helpers = functions.mapValues { (params: $0.params, body: $0.body) }
        let e = try SQLPolicies.expression(body, helpers, { SQLTables.Failure(statement: name, reason: $0) })
        let uid = who.userID ?? ""
        let row = try Row.fetchOne(db, sql: e.sql, arguments: StatementArguments(Array(repeating: uid, count: e.uids)))
        guard let value = row?.databaseValues.first else { return .null }
        if value.isNull { return .null }
        switch returns {
        case "boolean", "bool": return .bool((Int64.fromDatabaseValue(value) ?? 0) != 0)
        case "bigint", "integer", "int", "smallint", "double", "numeric", "real":
            if let i = Int64.fromDatabaseValue(value) { return .number(String(i)) }
            return .number(String(Double.fromDatabaseValue(value) ?? 0))
        default: return .string(String.fromDatabaseValue(value) ?? "")
        }
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
