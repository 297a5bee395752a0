import Foundation

extension SupabaseREST {
    /// How many rows of `table` match `filter` (PostgREST filters, e.g. `operation_id=eq.…`) as `token`
    /// sees them: `Prefer: count=exact` with `limit=0`, read from `Content-Range` (`*/N`). No rows are sent.
    public func count(_ table: String, filter: String, token: String) async throws(SupabaseError) -> Int {
        let query = filter.isEmpty ? "select=*&limit=0" : "select=*&\(filter)&limit=0"
        let r = try await http.send("GET", "/rest/v1/\(table)?\(query)", token: token, headers: [("Prefer", "count=exact")])
        guard let range = r.header("Content-Range"), let total = Self.total(ofContentRange: range) else {
            throw SupabaseError(kind: .unexpectedResponse, message: "GET \(table): no counted Content-Range (got \(r.header("Content-Range") ?? "none"))")
        }
        return total
    }

    /// The total of a PostgREST `Content-Range` (`0-24/312`, `*/312`); nil when uncounted (`*`, `0-24/*`).
    static func total(ofContentRange range: String) -> Int? {
        guard let slash = range.lastIndex(of: "/") else { return nil }
        return Int(range[range.index(after: slash)...].trimmingCharacters(in: .whitespaces))
    }
}
