import ConvoyJSON
import Foundation

/// `storage.buckets` and `storage.objects` in PostgreSQL
/// (Storage/PostgreSQL/001_object_storage.sql). Each statement runs through
/// `auth.request` as the requesting role with its claims, so PostgreSQL's RLS
/// decides, as it does behind storage-api; `.service` runs as `service_role`
/// (BYPASSRLS). As storage-api, a plain upload inserts without `RETURNING`
/// (which would need a SELECT policy too): INSERT alone lets a user upload,
/// and an upsert needs INSERT, SELECT and UPDATE, as Supabase documents.
struct PostgresObjectCatalog: ObjectCatalog {
    let store: PostgresStore

    private static let bucketJSON = """
        json_build_object('id', b.id, 'name', b.name, 'owner', coalesce(b.owner_id, b.owner::text), 'public', coalesce(b.public, false),
          'file_size_limit', b.file_size_limit, 'allowed_mime_types', b.allowed_mime_types,
          'created_at', extract(epoch FROM b.created_at), 'updated_at', extract(epoch FROM b.updated_at))
        """
    private static let objectJSON = """
        json_build_object('id', o.id, 'bucket_id', o.bucket_id, 'name', o.name, 'owner', coalesce(o.owner_id, o.owner::text),
          'version', o.version, 'metadata', o.metadata,
          'created_at', extract(epoch FROM o.created_at), 'updated_at', extract(epoch FROM o.updated_at))
        """

    func createBucket(_ bucket: BucketRow, as who: Principal) async throws {
        let types = bucket.allowedMimeTypes.map { JSONValue($0).text } ?? ""
        try await run("""
            WITH w AS (INSERT INTO storage.buckets (id, name, owner, owner_id, public, file_size_limit, allowed_mime_types, created_at, updated_at)
              VALUES ($1[1], $1[2], nullif($1[3], '')::uuid, nullif($1[3], ''), $1[4]::boolean, nullif($1[5], '')::bigint,
                      CASE WHEN $1[6] = '' THEN NULL ELSE ARRAY(SELECT json_array_elements_text($1[6]::json)) END, auth.now(), auth.now()))
            SELECT NULL::text
            """, [bucket.id, bucket.name, bucket.owner ?? "", bucket.isPublic ? "true" : "false",
                  bucket.fileSizeLimit.map(String.init) ?? "", types], as: who, duplicate: .bucketAlreadyExists)
    }

    func buckets(as who: Principal) async throws -> [BucketRow] {
        Self.array(try await run("SELECT coalesce(json_agg(\(Self.bucketJSON) ORDER BY b.name), '[]')::text FROM storage.buckets b",
                                     [], as: who)).map(Self.bucket)
    }

    func bucket(_ id: String, as who: Principal) async throws -> BucketRow? {
        Self.array(try await run("SELECT coalesce(json_agg(\(Self.bucketJSON)), '[]')::text FROM storage.buckets b WHERE b.id = $1[1]",
                                     [id], as: who)).first.map(Self.bucket)
    }

    func checkWrite(_ row: ObjectRow, upsert: Bool, as who: Principal) async throws {
        do {
            try await run("SELECT storage.convoy_can_write_object($1[1], $1[2], nullif($1[3], ''), $1[4]::jsonb, $1[5]::boolean)::text",
                          [row.bucketID, row.name, row.owner ?? "", row.metadata.text, upsert ? "true" : "false"], as: who)
        } catch let error as APIError where error.code == "PT200" {
            return  // tried, allowed, rolled back
        }
    }

    func put(_ row: ObjectRow, upsert: Bool, as who: Principal) async throws -> (id: String, replaced: String?) {
        let conflict = upsert ? """
             ON CONFLICT (bucket_id, name) DO UPDATE SET owner = EXCLUDED.owner, owner_id = EXCLUDED.owner_id, version = EXCLUDED.version,
               metadata = EXCLUDED.metadata, last_accessed_at = EXCLUDED.last_accessed_at
            """ : ""
        let text = try await run("""
            WITH old AS (SELECT o.id, o.version FROM storage.objects o WHERE o.bucket_id = $1[1] AND o.name = $1[2]),
            w AS (INSERT INTO storage.objects (id, bucket_id, name, owner, owner_id, version, metadata, created_at, updated_at, last_accessed_at)
              VALUES ($1[6]::uuid, $1[1], $1[2], nullif($1[3], '')::uuid, nullif($1[3], ''), $1[4], $1[5]::jsonb, auth.now(), auth.now(), auth.now())\(conflict))
            SELECT json_build_array((SELECT id::text FROM old), (SELECT version FROM old))::text
            """, [row.bucketID, row.name, row.owner ?? "", row.version, row.metadata.text, row.id], as: who, duplicate: .alreadyExists)
        let pair = text.flatMap(PostgresTables.parse)?.items ?? []
        return (pair.first?.string ?? row.id, pair.count > 1 ? pair[1].string : nil)
    }

    func object(bucket: String, name: String, as who: Principal) async throws -> ObjectRow? {
        Self.array(try await run("""
            SELECT coalesce(json_agg(\(Self.objectJSON)), '[]')::text FROM storage.objects o WHERE o.bucket_id = $1[1] AND o.name = $1[2]
            """, [bucket, name], as: who)).first.map(Self.object)
    }

    func delete(bucket: String, names: [String], as who: Principal) async throws -> [ObjectRow] {
        Self.array(try await run("""
            WITH o AS (DELETE FROM storage.objects d WHERE d.bucket_id = $1[1] AND d.name = ANY (ARRAY(SELECT json_array_elements_text($1[2]::json)))
                       RETURNING d.*)
            SELECT coalesce(json_agg(\(Self.objectJSON) ORDER BY o.name), '[]')::text FROM o
            """, [bucket, JSONValue(names).text], as: who)).map(Self.object)
    }

    func objects(bucket: String, prefix: String, limit: Int, as who: Principal) async throws -> [ObjectRow] {
        Self.array(try await run("""
            SELECT coalesce(json_agg(\(Self.objectJSON) ORDER BY o.name), '[]')::text FROM (
              SELECT * FROM storage.objects x WHERE x.bucket_id = $1[1] AND starts_with(x.name, $1[2]) ORDER BY x.name LIMIT $1[3]::int) o
            """, [bucket, prefix, String(limit)], as: who)).map(Self.object)
    }

    // MARK: - Pieces

    /// Runs a statement as `who`; PostgreSQL's refusals become storage-api's
    /// errors (42501 RLS, 23505 `duplicate`, 23503 a missing bucket).
    @discardableResult
    private func run(_ sql: String, _ params: [String], as who: Principal,
                     duplicate: StorageAPIError = .alreadyExists) async throws -> String? {
        do {
            return try await store.request(sql, params, as: who)
        } catch let error as APIError {
            switch error.code {
            case "42501": throw StorageAPIError.rlsViolation
            case "23505": throw duplicate
            case "23503": throw StorageAPIError.noSuchBucket
            case "22P02": throw StorageAPIError.invalidRequest(error.message)
            default: throw error
            }
        }
    }

    static func array(_ text: String?) -> [JSONValue] {
        text.flatMap(PostgresTables.parse)?.items ?? []
    }

    private static func date(_ value: JSONValue?) -> Date {
        value?.double.map { Date(timeIntervalSince1970: $0) } ?? .distantPast
    }

    static func bucket(_ o: JSONValue) -> BucketRow {
        BucketRow(id: o["id"]?.string ?? "", name: o["name"]?.string ?? "", owner: o["owner"]?.string,
                  isPublic: o["public"]?.bool ?? false, fileSizeLimit: o["file_size_limit"]?.int,
                  allowedMimeTypes: o["allowed_mime_types"]?.strings, createdAt: date(o["created_at"]), updatedAt: date(o["updated_at"]))
    }

    static func object(_ o: JSONValue) -> ObjectRow {
        let metadata = o["metadata"].flatMap { m -> String? in
            guard case .object = m else { return nil }
            return m.text
        }
        return ObjectRow(id: o["id"]?.string ?? "", bucketID: o["bucket_id"]?.string ?? "", name: o["name"]?.string ?? "",
                         owner: o["owner"]?.string, version: o["version"]?.string ?? "",
                         createdAt: date(o["created_at"]), updatedAt: date(o["updated_at"]), metadata: ObjectMetadata(text: metadata))
    }
}
