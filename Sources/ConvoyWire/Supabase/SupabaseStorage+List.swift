import ConvoyJSON
import Foundation

extension SupabaseStorage {
    /// An entry of `list`: a file (with its id) or a folder (no id), its name relative to the prefix.
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var id: String?
        public var isFolder: Bool { id == nil }
    }

    /// storage-api's `POST /object/list/{bucket}`: the entries one level below `prefix` that `token`'s
    /// holder may see (RLS on `storage.objects`), sorted by name, at most `limit` from `offset`.
    public func list(bucket: String, prefix: String, limit: Int = 100, offset: Int = 0, token: String) async throws(SupabaseError) -> [Entry] {
        let body: JSONValue = ["prefix": .string(prefix), "limit": JSONValue(limit), "offset": JSONValue(offset), "sortBy": ["column": "name", "order": "asc"]]
        let r = try await http.send("POST", "/storage/v1/object/list/\(Self.encode(bucket))", body: SupabaseHTTP.json(body), token: token)
        guard case .array(let rows)? = JSONScanner.parse(r.body) else {
            throw SupabaseError(kind: .unexpectedResponse, message: "list: not a JSON array")
        }
        return rows.compactMap { row in row["name"]?.string.map { Entry(name: $0, id: row["id"]?.string) } }
    }
}
