import ConvoyJSON

/// Requests whose bodies are JSON text made elsewhere (a declared app's templates, docs/apps.md).
extension SupabaseREST {
    /// Inserts `json` (an object or an array of them), `Prefer: return=representation`: the rows as stored.
    public func insertReturning(_ table: String, json: [UInt8], token: String) async throws(SupabaseError) -> [JSONValue] {
        try Self.rows(try await http.send("POST", "/rest/v1/\(table)", body: json, token: token, headers: [("Prefer", "return=representation")]),
                      "POST \(table)")
    }

    /// Upserts `json` on `onConflict` (merge duplicates), `return=representation`: the rows as stored.
    public func upsertReturning(_ table: String, json: [UInt8], onConflict: String, token: String) async throws(SupabaseError) -> [JSONValue] {
        try Self.rows(try await http.send("POST", "/rest/v1/\(table)?on_conflict=\(onConflict)", body: json, token: token,
                                          headers: [("Prefer", "return=representation,resolution=merge-duplicates")]), "POST \(table)")
    }

    /// `PATCH` of the rows matching `query` with `json`, `return=representation`: the rows as changed (empty when none
    /// matched, or none is visible to the token).
    public func updateReturning(_ table: String, query: String, json: [UInt8], token: String) async throws(SupabaseError) -> [JSONValue] {
        try Self.rows(try await http.send("PATCH", "/rest/v1/\(table)?\(query)", body: json, token: token, headers: [("Prefer", "return=representation")]),
                      "PATCH \(table)")
    }

    /// `PATCH` of the rows matching `query` with `json`, `return=minimal`: no rows back (nor how many changed).
    @discardableResult
    public func update(_ table: String, query: String, json: [UInt8], token: String) async throws(SupabaseError) -> HTTPResponse {
        try await http.send("PATCH", "/rest/v1/\(table)?\(query)", body: json, token: token, headers: [("Prefer", "return=minimal")])
    }

    /// `DELETE` of the rows matching `query`, `return=representation`: the rows deleted (empty when none matched, or
    /// none is visible to the token).
    public func deleteReturning(_ table: String, query: String, token: String) async throws(SupabaseError) -> [JSONValue] {
        try Self.rows(try await http.send("DELETE", "/rest/v1/\(table)?\(query)", token: token, headers: [("Prefer", "return=representation")]),
                      "DELETE \(table)")
    }

    /// `POST /rpc/<name>` with `json` (named arguments); the function's JSON result (null for none).
    public func rpc(_ name: String, json: [UInt8], token: String) async throws(SupabaseError) -> JSONValue {
        let r = try await http.send("POST", "/rest/v1/rpc/\(name)", body: json, token: token)
        return JSONScanner.parse(r.body, maxDepth: JSONScanner.foundationDepth) ?? .null
    }

    /// Rows of `table` matching `query`, each a JSON object, with the response body's size in bytes.
    public func selectSized(_ table: String, query: String, token: String) async throws(SupabaseError) -> (rows: [JSONValue], bytes: Int) {
        let r = try await http.send("GET", "/rest/v1/\(table)?\(query)", token: token)
        return (try Self.rows(r, "GET \(table)"), r.body.count)
    }
}
