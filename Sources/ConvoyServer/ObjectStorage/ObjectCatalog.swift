import ConvoyJSON
import Foundation

/// The rows of Supabase Storage, `storage.buckets` and `storage.objects`, in
/// a store: SQLite (`SQLiteObjectCatalog`, the app's `StoragePolicy` applied in
/// Swift) or PostgreSQL (`PostgresObjectCatalog`, each statement run as the
/// requesting role so PostgreSQL's RLS decides). Every method acts `as` a
/// principal: the request's, or `.service` where storage-api acts as its
/// superuser (bucket look-ups, signed URLs, the retention purge). A refusal
/// by row-level security is `StorageAPIError.rlsViolation`; rows RLS hides
/// are simply not found.
protocol ObjectCatalog: Sendable {
    func createBucket(_ bucket: BucketRow, as who: Principal) async throws
    func buckets(as who: Principal) async throws -> [BucketRow]
    func bucket(_ id: String, as who: Principal) async throws -> BucketRow?
    /// Whether `who` may write `row` (insert it, or with `upsert` also replace
    /// the one there), asked before the bytes are read, as storage-api's
    /// `canUpload` tries the write and rolls it back. Throws the refusal.
    func checkWrite(_ row: ObjectRow, upsert: Bool, as who: Principal) async throws
    /// Writes `row` (a new version of its bytes). Without `upsert`, an existing
    /// object is `alreadyExists`. Returns the row's id and the version it replaced.
    func put(_ row: ObjectRow, upsert: Bool, as who: Principal) async throws -> (id: String, replaced: String?)
    func object(bucket: String, name: String, as who: Principal) async throws -> ObjectRow?
    /// Deletes the named objects `who` may delete (and see); returns them.
    func delete(bucket: String, names: [String], as who: Principal) async throws -> [ObjectRow]
    /// The objects `who` may see whose names start with `prefix`, by name, at most `limit`.
    func objects(bucket: String, prefix: String, limit: Int, as who: Principal) async throws -> [ObjectRow]
    /// Which of `versions` a row still names (the orphan sweep: `ObjectStorage+Sweep.swift`).
    func knownVersions(_ versions: [String]) async throws -> Set<String>
}

/// A row of `storage.buckets`.
struct BucketRow: Sendable, Equatable {
    var id: String
    var name: String
    var owner: String?
    var isPublic: Bool
    var fileSizeLimit: Int?
    var allowedMimeTypes: [String]?
    var createdAt: Date
    var updatedAt: Date

    /// As storage-api answers it (`bucketSchema`; a null `owner` is `""`, as
    /// its JSON serializer writes a null for a string property).
    var json: JSONValue {
        ["allowed_mime_types": allowedMimeTypes.map { JSONValue($0) } ?? .null, "created_at": .string(Timestamps.format(createdAt)),
         "file_size_limit": fileSizeLimit.map { JSONValue($0) } ?? .null, "id": .string(id), "name": .string(name),
         "owner": .string(owner ?? ""), "public": .bool(isPublic), "type": "STANDARD", "updated_at": .string(Timestamps.format(updatedAt))]
    }
}

/// A row of `storage.objects`. `version` names its bytes on disk.
struct ObjectRow: Sendable, Equatable {
    var id: String
    var bucketID: String
    var name: String
    var owner: String?
    var version: String
    var createdAt: Date
    var updatedAt: Date
    var metadata: ObjectMetadata

    /// What a policy is asked about.
    var policyObject: StoragePolicy.Object {
        StoragePolicy.Object(bucketID: bucketID, name: name, owner: owner, size: metadata.size, mimetype: metadata.mimetype)
    }

    /// As storage-api answers it (`objectSchema`).
    var json: JSONValue {
        ["bucket_id": .string(bucketID), "created_at": .string(Timestamps.format(createdAt)), "id": .string(id),
         "last_accessed_at": .string(Timestamps.format(updatedAt)), "metadata": metadata.json, "name": .string(name),
         "owner": .string(owner ?? ""), "owner_id": .string(owner ?? ""), "updated_at": .string(Timestamps.format(updatedAt)),
         "user_metadata": .null, "version": .string(version)]
    }
}

/// `storage.objects.metadata` as storage-api's file backend writes it.
struct ObjectMetadata: Sendable, Equatable, Codable {
    var eTag: String?
    var size: Int?
    var mimetype: String?
    var cacheControl: String?
    var lastModified: String?
    var contentLength: Int?
    var httpStatusCode: Int?

    var json: JSONValue {
        var out: [String: JSONValue] = [:]
        if let eTag { out["eTag"] = .string(eTag) }
        if let size { out["size"] = JSONValue(size) }
        if let mimetype { out["mimetype"] = .string(mimetype) }
        if let cacheControl { out["cacheControl"] = .string(cacheControl) }
        if let lastModified { out["lastModified"] = .string(lastModified) }
        if let contentLength { out["contentLength"] = JSONValue(contentLength) }
        if let httpStatusCode { out["httpStatusCode"] = JSONValue(httpStatusCode) }
        return JSONValue(out)
    }

    var text: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    init(eTag: String? = nil, size: Int? = nil, mimetype: String? = nil, cacheControl: String? = nil,
         lastModified: String? = nil, contentLength: Int? = nil, httpStatusCode: Int? = nil) {
        self.eTag = eTag
        self.size = size
        self.mimetype = mimetype
        self.cacheControl = cacheControl
        self.lastModified = lastModified
        self.contentLength = contentLength
        self.httpStatusCode = httpStatusCode
    }

    init(text: String?) {
        self = text.flatMap { try? JSONDecoder().decode(ObjectMetadata.self, from: Data($0.utf8)) } ?? ObjectMetadata()
    }
}
