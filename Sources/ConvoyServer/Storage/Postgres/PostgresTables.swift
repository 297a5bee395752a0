import ConvoyJSON
import Foundation
import GRDB
import HTTPTypes
import PostgresNIO

/// PostgREST's operations on every table of PostgreSQL's `public` schema, as
/// PostgREST builds them: request JSON goes in through
/// `json_populate_recordset`, rows come back through `json_agg`, filter values
/// are parameters cast to their column's type, identifiers come from the
/// schema read at start, and PostgreSQL enforces RLS: each statement runs
/// through `auth.request` as the request's role with its claims. Parameters
/// are `$1[1]`, `$1[2]`, … (one text array).
struct PostgresTables: TableStore {
    let store: PostgresStore
    /// The app served: its purge.
    let app: any ServerApp
    var schema: Schema { store.schema }

    // MARK: - Reads

    func select(_ t: Schema.Table, _ q: RESTQuery, as who: Principal, countExact: Bool) async throws -> (rows: JSONRows, total: Int?) {
        var params: [String] = []
        let filter = whereSQL(q, &params)
        var page = ""
        if let limit = q.limit { page += " LIMIT \(limit)" }
        if let offset = q.offset { page += " OFFSET \(offset)" }
        let sql = """
            SELECT json_build_array(
              coalesce((SELECT json_agg(r) FROM (SELECT \(columns(q)) FROM \(name(t))\(filter)\(q.orderClause)\(page)) r), '[]'),
              \(countExact ? "(SELECT count(*) FROM \(name(t))\(filter))" : "NULL"))::text
            """
        let text = try await store.request(sql, params, as: who)
        let pair = text.flatMap { Self.parse($0) }?.items ?? []
        let rows = JSONRows(objects: pair.first?.items ?? [])
        return (rows, pair.last?.int)
    }

    // MARK: - Writes

    func insert(_ t: Schema.Table, body: JSONValue, _ q: RESTQuery, as who: Principal, upsert: Bool,
                ignoreDuplicates: Bool, returning: Bool, missingDefault: Bool) async throws -> JSONRows {
        let objects = try Self.objects(body)
        guard !objects.isEmpty else { return .empty }
        // PostgREST inserts the union of the objects' keys; a key an object lacks is NULL for it.
        var keys: [String] = []
        for object in objects {
            for key in object.keys.sorted() where !keys.contains(key) { keys.append(try column(key, t)) }
        }
        let params = [JSONValue.array(objects.map { JSONValue($0) }).text]
        var sql: String
        if keys.isEmpty {
            // `{}`: a row of defaults.
            guard objects.count == 1 else {
                throw APIError.postgrest(.badRequest, "PGRST102", "A bulk insert of empty objects: give at least one column")
            }
            sql = "INSERT INTO \(name(t)) AS t DEFAULT VALUES"
        } else if missingDefault, objects.contains(where: { $0.count != keys.count }) {
            // `Prefer: missing=default`: each object's own keys, its column's DEFAULT for the others.
            let list = keys.map(Schema.quote).joined(separator: ", ")
            let values = objects.indices.map { i in
                "(" + keys.map { key in
                    objects[i][key] == nil ? "DEFAULT" : "(json_populate_record(NULL::\(name(t)), ($1[1]::json) -> \(i))).\(Schema.quote(key))"
                }.joined(separator: ", ") + ")"
            }
            sql = "INSERT INTO \(name(t)) AS t (\(list)) VALUES \(values.joined(separator: ", "))"
        } else {
            let list = keys.map(Schema.quote).joined(separator: ", ")
            sql = "INSERT INTO \(name(t)) AS t (\(list)) SELECT \(list) FROM json_populate_recordset(NULL::\(name(t)), $1[1]::json)"
        }
        if upsert {
            let conflict = q.onConflict ?? t.primaryKey
            sql += " ON CONFLICT (\(Schema.quote(conflict))) "
            sql += ignoreDuplicates || keys.isEmpty ? "DO NOTHING"
                : "DO UPDATE SET " + keys.map { "\(Schema.quote($0)) = EXCLUDED.\(Schema.quote($0))" }.joined(separator: ", ")
        }
        return try await write(sql, params, q, as: who, returning: returning)
    }

    func update(_ t: Schema.Table, body: JSONValue, _ q: RESTQuery, as who: Principal, returning: Bool) async throws -> JSONRows {
        guard let object = body.dictionary else {
            throw APIError.postgrest(.badRequest, "PGRST102", "Expected a JSON object")
        }
        guard !object.isEmpty else { return .empty }
        let keys = try object.keys.sorted().map { try column($0, t) }
        let list = keys.map(Schema.quote).joined(separator: ", ")
        var params = [JSONValue(object).text]
        let sql = "UPDATE \(name(t)) AS t SET (\(list)) = (SELECT \(list) FROM json_populate_record(NULL::\(name(t)), $1[1]::json))"
            + whereSQL(q, &params)
        return try await write(sql, params, q, as: who, returning: returning)
    }

    func delete(_ t: Schema.Table, _ q: RESTQuery, as who: Principal, returning: Bool) async throws -> JSONRows {
        var params: [String] = []
        let sql = "DELETE FROM \(name(t)) AS t" + whereSQL(q, &params)
        return try await write(sql, params, q, as: who, returning: returning)
    }

    /// Runs a write; with `returning`, the written rows (`RETURNING` needs the
    /// SELECT policy to pass for them, as in PostgREST).
    private func write(_ sql: String, _ params: [String], _ q: RESTQuery, as who: Principal,
                       returning: Bool) async throws -> JSONRows {
        let statement = returning
            ? "WITH w AS (\(sql) RETURNING t.*) SELECT coalesce(json_agg(r), '[]')::text FROM (SELECT \(columns(q)) FROM w) r"
            : "WITH w AS (\(sql)) SELECT NULL::text"
        let text = try await store.request(statement, params, as: who)
        return returning ? Self.rows(text) : .empty
    }

    // MARK: - RPC and retention

    /// `SELECT public.name(arg => $1::type, …)` as the caller: PostgreSQL checks
    /// EXECUTE grants, and SECURITY DEFINER functions do their own checks.
    func rpc(_ name: String, _ args: [String: JSONValue], as who: Principal) async throws -> JSONValue {
        guard let f = store.functions[name] else {
            throw APIError.postgrest(.notFound, "PGRST202", "Could not find the function public.\(name) in the schema cache")
        }
        // As PostgREST: the arguments object becomes a typed record (json_to_record
        // converts strings, numbers, arrays and objects by each argument's type).
        guard f.signature.accepts(args.keys) else { throw RPCSignature.noFunction(name, args.keys) }
        var named: [String] = [], columns: [String] = []
        for key in args.keys.sorted() {
            guard let type = f.arguments[key] else { throw RPCSignature.noFunction(name, args.keys) }
            named.append("\(Schema.quote(key)) => a.\(Schema.quote(key))")
            columns.append("\(Schema.quote(key)) \(type)")
        }
        let call = "public.\(Schema.quote(name))(\(named.joined(separator: ", ")))"
        let from = columns.isEmpty ? "" : " FROM json_to_record($1[1]::json) AS a(\(columns.joined(separator: ", ")))"
        let sql = f.returnsVoid ? "SELECT \(call)::text\(from)"
            : f.returnsSet ? "SELECT coalesce(json_agg(r), '[]')::text\(from.isEmpty ? " FROM" : "\(from),") \(call) r"
            : "SELECT to_json(\(call))::text\(from)"
        let text = try await store.request(sql, [JSONValue(args).text], as: who)
        guard !f.returnsVoid, let value = text.flatMap(Self.parse) else { return .null }
        return value
    }

    func purge(before cutoff: Date, now: Date) async throws -> Int {
        let retention = now.timeIntervalSince(cutoff)
        let deleted = try await store.transaction { c in
            try await PostgresStore.text(c, PostgresQuery(unsafeSQL: app.postgresPurge(retention: retention) { store.functions[$0] != nil }), logger: store.logger)
        }
        return deleted.flatMap { Int($0) } ?? 0
    }

    // MARK: - Pieces

    private func name(_ t: Schema.Table) -> String { "public.\(Schema.quote(t.name))" }

    private func columns(_ q: RESTQuery) -> String { q.columns.map(Schema.quote).joined(separator: ", ") }

    private func column(_ key: String, _ t: Schema.Table) throws(APIError) -> String {
        guard t.column(key) != nil else {
            throw .postgrest(.badRequest, "PGRST204", "Could not find the '\(key)' column of '\(t.name)' in the schema cache")
        }
        return key
    }

    /// ` WHERE …` for the query's filters, each value a parameter cast to its column's type.
    private func whereSQL(_ q: RESTQuery, _ params: inout [String]) -> String {
        q.whereClause { value, column in
            params.append(Values.filterText(value) ?? "")
            return "$1[\(params.count)]::\(column.type.postgresName)"
        }.map { " WHERE \($0)" } ?? ""
    }

    /// JSON PostgreSQL wrote (`json_agg`, `to_json`): its members in PostgreSQL's order (the columns').
    static func parse(_ text: String) -> JSONValue? {
        JSONScanner.parse(text, maxDepth: JSONScanner.foundationDepth)
    }

    static func rows(_ text: String?) -> JSONRows {
        guard case .array(let objects)? = text.flatMap(parse) else { return .empty }
        return JSONRows(objects: objects)
    }
}
