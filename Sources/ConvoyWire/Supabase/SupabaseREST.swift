import ConvoyJSON
import Foundation

/// PostgREST (`/rest/v1`): inserts, selects and RPCs as a signed-in user.
public struct SupabaseREST: Sendable {
    public let http: SupabaseHTTP

    public init(_ http: SupabaseHTTP) { self.http = http }

    /// Inserts rows given as a JSON array (or object), `Prefer: return=minimal`:
    /// a device cannot read back the locations it sends (RLS), so it never asks to.
    @discardableResult
    public func insert(_ table: String, json: [UInt8], token: String) async throws(SupabaseError) -> HTTPResponse {
        try await http.send("POST", "/rest/v1/\(table)", body: json, token: token, headers: [("Prefer", "return=minimal")])
    }

    /// Upsert on `onConflict` (merge duplicates), `return=minimal`.
    @discardableResult
    public func upsert(_ table: String, json: [UInt8], onConflict: String, token: String) async throws(SupabaseError) -> HTTPResponse {
        try await http.send("POST", "/rest/v1/\(table)?on_conflict=\(onConflict)", body: json, token: token,
                            headers: [("Prefer", "return=minimal,resolution=merge-duplicates")])
    }

    /// Deletes the rows of `table` matching `query` (PostgREST's filters), `return=minimal`.
    @discardableResult
    public func delete(_ table: String, query: String, token: String) async throws(SupabaseError) -> HTTPResponse {
        try await http.send("DELETE", "/rest/v1/\(table)?\(query)", token: token, headers: [("Prefer", "return=minimal")])
    }

    /// Rows of `table` matching `query` (PostgREST's query string, e.g.
    /// `select=id,payload&recipient_id=eq.…&id=gt.41&order=id`), each a JSON object.
    public func select(_ table: String, query: String, token: String) async throws(SupabaseError) -> [JSONValue] {
        try Self.rows(try await http.send("GET", "/rest/v1/\(table)?\(query)", token: token), "GET \(table)")
    }

    /// Rows of `table` matching `query`, decoded as `Row` (unknown columns are
    /// ignored), with the response body's size in bytes.
    public func select<Row: Decodable>(_ table: String, query: String, token: String,
                                       as _: Row.Type) async throws(SupabaseError) -> (rows: [Row], bytes: Int) {
        let r = try await http.send("GET", "/rest/v1/\(table)?\(query)", token: token)
        return (try Self.decode([Row].self, r, "GET \(table)"), r.body.count)
    }

    /// Inserts `rows` with `Prefer: return=representation`: the rows as stored, decoded as `Row`.
    public func insertReturning<Row: Decodable>(_ table: String, rows: some Encodable, token: String,
                                                as _: Row.Type) async throws(SupabaseError) -> [Row] {
        let r = try await http.send("POST", "/rest/v1/\(table)", body: try Self.encode(rows), token: token,
                                    headers: [("Prefer", "return=representation")])
        return try Self.decode([Row].self, r, "POST \(table)")
    }

    /// Upsert of `rows` on `onConflict` (merge duplicates), `return=minimal`.
    public func upsert(_ table: String, rows: some Encodable, onConflict: String, token: String) async throws(SupabaseError) {
        try await upsert(table, json: try Self.encode(rows), onConflict: onConflict, token: token)
    }

    /// `PATCH` of the rows matching `query` with `changes`, `return=representation`: the rows as changed, decoded as `Row`
    /// (empty when none matched, or none is visible to the token).
    public func updateReturning<Row: Decodable>(_ table: String, query: String, changes: some Encodable, token: String,
                                                as _: Row.Type) async throws(SupabaseError) -> [Row] {
        let r = try await http.send("PATCH", "/rest/v1/\(table)?\(query)", body: try Self.encode(changes), token: token,
                                    headers: [("Prefer", "return=representation")])
        return try Self.decode([Row].self, r, "PATCH \(table)")
    }

    /// `POST /rpc/<name>` with `args` (an `Encodable` object of named arguments), its result decoded as `Result`.
    public func rpc<Result: Decodable>(_ name: String, arguments args: some Encodable, token: String,
                                       returning _: Result.Type) async throws(SupabaseError) -> Result {
        let r = try await http.send("POST", "/rest/v1/rpc/\(name)", body: try Self.encode(args), token: token)
        return try Self.decode(Result.self, r, "rpc/\(name)")
    }

    /// `POST /rpc/<name>` with `args`, its result ignored.
    @discardableResult
    public func rpc(_ name: String, arguments args: some Encodable, token: String) async throws(SupabaseError) -> HTTPResponse {
        try await http.send("POST", "/rest/v1/rpc/\(name)", body: try Self.encode(args), token: token)
    }

    /// A response body as `T`; what it is not is an unexpected response naming `what` was asked.
    static func decode<T: Decodable>(_: T.Type, _ r: HTTPResponse, _ what: String) throws(SupabaseError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(r.body))
        } catch {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(what): not \(T.self): \(error)")
        }
    }

    static func encode(_ value: some Encodable) throws(SupabaseError) -> [UInt8] {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes]
            return Array(try encoder.encode(value))
        } catch {
            throw SupabaseError(kind: .unexpectedResponse, message: "cannot encode \(type(of: value)): \(error)")
        }
    }

    /// Inserts `objects` (a JSON object or an array of them) with `Prefer: return=representation`: the rows as stored.
    public func insertReturning(_ table: String, objects: JSONValue, token: String) async throws(SupabaseError) -> [JSONValue] {
        let r = try await http.send("POST", "/rest/v1/\(table)", body: SupabaseHTTP.json(objects), token: token,
                                    headers: [("Prefer", "return=representation")])
        return try Self.rows(r, "POST \(table)")
    }

    /// `POST /rpc/<name>` with named arguments; the function's JSON result (null for none).
    public func rpc(_ name: String, _ args: JSONValue, token: String) async throws(SupabaseError) -> JSONValue {
        let r = try await http.send("POST", "/rest/v1/rpc/\(name)", body: SupabaseHTTP.json(args), token: token)
        return JSONScanner.parse(r.body, maxDepth: JSONScanner.foundationDepth) ?? .null
    }

    /// A response body that is an array of objects; what it is not is an unexpected response naming `what` was asked.
    static func rows(_ r: HTTPResponse, _ what: String) throws(SupabaseError) -> [JSONValue] {
        guard case .array(let rows)? = JSONScanner.parse(r.body, maxDepth: JSONScanner.foundationDepth),
              rows.allSatisfy({ if case .object = $0 { true } else { false } })
        else { throw SupabaseError(kind: .unexpectedResponse, message: "\(what): not a JSON array of rows") }
        return rows
    }
}
