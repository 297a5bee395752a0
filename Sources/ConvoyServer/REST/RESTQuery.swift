import Foundation
import GRDB
import HTTPTypes

/// A PostgREST request's query string, parsed and checked against the schema.
/// Identifiers come only from the schema; values are always bound parameters.
struct RESTQuery: Sendable {
    /// One filter; each store renders it with its own placeholders.
    struct Filter: Sendable {
        enum Operation: Sendable { case compare(String), oneOf, isNull, isNotNull, isTrue, isFalse, nothing }
        var column: Schema.Column
        var operation: Operation
        var arguments: [DatabaseValue]
        var negated = false

        /// SQL text; `bind` records an argument and returns its placeholder.
        func sql(_ bind: (DatabaseValue, Schema.Column) -> String) -> String {
            let quoted = Schema.quote(column.name)
            let text: String
            switch operation {
            case .compare(let op): text = "\(quoted) \(op) \(bind(arguments[0], column))"
            case .oneOf: text = "\(quoted) IN (\(arguments.map { bind($0, column) }.joined(separator: ", ")))"
            case .isNull: text = "\(quoted) IS NULL"
            case .isNotNull: text = "\(quoted) IS NOT NULL"
            case .isTrue: text = "\(quoted) IS TRUE"
            case .isFalse: text = "\(quoted) IS FALSE"
            case .nothing: text = "false"
            }
            return negated ? "NOT (\(text))" : text
        }
    }

    struct Order: Sendable {
        var column: String
        var descending: Bool
        var nullsFirst: Bool?
    }

    var columns: [String]
    var filters: [Filter] = []
    var order: [Order] = []
    var limit: Int?
    var offset: Int?
    var onConflict: String?

    /// Parameters PostgREST reserves; every other key is a column filter.
    static let reserved: Set<String> = ["select", "order", "limit", "offset", "on_conflict", "columns", "apikey"]

    init(items: [(String, String)], table: Schema.Table) throws(APIError) {
        columns = table.columns.map(\.name)
        for (key, value) in items {
            switch key {
            case "select": columns = try Self.select(value, table)
            case "order": order = try Self.order(value, table)
            case "limit": limit = try Self.count(value, key)
            case "offset": offset = try Self.count(value, key)
            case "on_conflict":
                _ = try Self.column(value, table)
                onConflict = value
            case "columns", "apikey": break
            default: filters.append(try Self.filter(key, value, table))
            }
        }
    }

    /// `WHERE` text for the filters (ANDed), or nil for none; `bind` as in `Filter.sql`.
    func whereClause(_ bind: (DatabaseValue, Schema.Column) -> String) -> String? {
        guard !filters.isEmpty else { return nil }
        return filters.map { "(\($0.sql(bind)))" }.joined(separator: " AND ")
    }

    /// SQLite's form: `?` placeholders and the arguments in order.
    var sqliteWhere: (sql: String, arguments: [DatabaseValue])? {
        var arguments: [DatabaseValue] = []
        return whereClause { value, _ in
            arguments.append(value)
            return "?"
        }.map { ($0, arguments) }
    }

    var orderClause: String {
        guard !order.isEmpty else { return "" }
        return " ORDER BY " + order.map { o in
            var s = "\(Schema.quote(o.column)) \(o.descending ? "DESC" : "ASC")"
            // PostgreSQL sorts NULLs last ascending and first descending by default.
            let nullsFirst = o.nullsFirst ?? o.descending
            s += nullsFirst ? " NULLS FIRST" : " NULLS LAST"
            return s
        }.joined(separator: ", ")
    }

    // MARK: - Parsing

    static func column(_ name: String, _ table: Schema.Table) throws(APIError) -> Schema.Column {
        guard let c = table.column(name) else {
            throw .postgrest(.badRequest, "42703", "column \(table.name).\(name) does not exist")
        }
        return c
    }

    private static func select(_ value: String, _ table: Schema.Table) throws(APIError) -> [String] {
        if value.isEmpty || value == "*" { return table.columns.map(\.name) }
        var out: [String] = []
        for raw in value.split(separator: ",", omittingEmptySubsequences: false) {
            let name = raw.trimmingCharacters(in: .whitespaces)
            if name == "*" {
                out += table.columns.map(\.name)
                continue
            }
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                throw .postgrest(.badRequest, "PGRST100", "failed to parse select parameter (\(value))",
                                 hint: "Convoy serves plain column lists: no embedding, aliases or casts")
            }
            out.append(try column(name, table).name)
        }
        return out
    }

    private static func order(_ value: String, _ table: Schema.Table) throws(APIError) -> [Order] {
        try value.split(separator: ",").map { (term) throws(APIError) -> Order in
            let parts = term.split(separator: ".").map(String.init)
            guard let name = parts.first else { throw .postgrest(.badRequest, "PGRST100", "failed to parse order (\(value))") }
            var o = Order(column: try column(name, table).name, descending: false)
            for modifier in parts.dropFirst() {
                switch modifier {
                case "asc": o.descending = false
                case "desc": o.descending = true
                case "nullsfirst": o.nullsFirst = true
                case "nullslast": o.nullsFirst = false
                default: throw .postgrest(.badRequest, "PGRST100", "failed to parse order (\(value))")
                }
            }
            return o
        }
    }

    private static func count(_ value: String, _ key: String) throws(APIError) -> Int {
        guard let n = Int(value), n >= 0 else {
            throw .postgrest(.badRequest, "PGRST100", "failed to parse \(key) (\(value)): a whole number ≥ 0 is expected")
        }
        return n
    }

    private static func filter(_ key: String, _ raw: String, _ table: Schema.Table) throws(APIError) -> Filter {
        let c = try column(key, table)
        var value = Substring(raw)
        var negate = false
        if value.hasPrefix("not.") {
            negate = true
            value = value.dropFirst(4)
        }
        guard let dot = value.firstIndex(of: ".") else {
            throw .postgrest(.badRequest, "PGRST100", "failed to parse filter (\(raw))", hint: "use column=operator.value, e.g. id=eq.1")
        }
        let op = String(value[..<dot])
        let operand = String(value[value.index(after: dot)...])
        var f: Filter
        switch op {
        case "eq", "neq", "lt", "lte", "gt", "gte":
            let sqlOp = ["eq": "=", "neq": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="][op]!
            f = Filter(column: c, operation: .compare(sqlOp), arguments: [try Values.parse(operand, as: c)])
        case "in":
            let items = try inList(operand, raw)
            let values = try items.map { (item) throws(APIError) -> DatabaseValue in try Values.parse(item, as: c) }
            f = Filter(column: c, operation: values.isEmpty ? .nothing : .oneOf, arguments: values)
        case "is":
            switch operand.lowercased() {
            case "null": f = Filter(column: c, operation: .isNull, arguments: [])
            case "not_null": f = Filter(column: c, operation: .isNotNull, arguments: [])
            // PostgREST's booleans: `is.unknown` is a null boolean.
            case "true": f = Filter(column: c, operation: .isTrue, arguments: [])
            case "false": f = Filter(column: c, operation: .isFalse, arguments: [])
            case "unknown": f = Filter(column: c, operation: .isNull, arguments: [])
            default:
                throw .postgrest(.badRequest, "PGRST100", "failed to parse filter (\(raw))", hint: "is. takes null, not_null, true, false or unknown")
            }
        default:
            throw .postgrest(.badRequest, "PGRST100", "failed to parse filter (\(raw))",
                             hint: "operators: eq, neq, lt, lte, gt, gte, in, is (and not.)")
        }
        f.negated = negate
        return f
    }

    /// `(a,b,"c,d")`: PostgREST's list syntax with optional double quotes.
    private static func inList(_ operand: String, _ raw: String) throws(APIError) -> [String] {
        guard operand.hasPrefix("("), operand.hasSuffix(")") else {
            throw .postgrest(.badRequest, "PGRST100", "failed to parse filter (\(raw))", hint: "in.(a,b,c)")
        }
        var items: [String] = [], current = "", quoted = false, sawAny = false
        for ch in operand.dropFirst().dropLast() {
            switch ch {
            case "\"": quoted.toggle(); sawAny = true
            case "," where !quoted: items.append(current); current = ""
            default: current.append(ch); sawAny = true
            }
        }
        guard !quoted else { throw .postgrest(.badRequest, "PGRST100", "failed to parse filter (\(raw))") }
        if sawAny || !items.isEmpty { items.append(current) }
        return items
    }
}
