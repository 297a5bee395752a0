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

    /// Rows of `table` matching `query` (PostgREST's query string, e.g.
    /// `select=id,payload&recipient_id=eq.…&id=gt.41&order=id`).
    public func select(_ table: String, query: String, token: String) async throws(SupabaseError) -> [[String: Any]] {
        let r = try await http.send("GET", "/rest/v1/\(table)?\(query)", token: token)
        guard let rows = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [[String: Any]] else {
            throw SupabaseError(kind: .unexpectedResponse, message: "GET \(table): not a JSON array")
        }
        return rows
    }

    /// `POST /rpc/<name>` with named arguments; the function's JSON result.
    public func rpc(_ name: String, _ args: [String: Any], token: String) async throws(SupabaseError) -> Any {
        let r = try await http.send("POST", "/rest/v1/rpc/\(name)", body: SupabaseHTTP.json(args), token: token)
        return (try? JSONSerialization.jsonObject(with: Data(r.body), options: [.fragmentsAllowed])) ?? NSNull()
    }
}
