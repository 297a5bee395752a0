import ConvoyJSON
import Foundation
import GRDB

/// `storage.buckets` and `storage.objects` in the SQLite store (tables
/// `storage_buckets`, `storage_objects`, the same columns as
/// Storage/PostgreSQL/001_object_storage.sql). Row-level security is the app's
/// `StoragePolicy`, applied as PostgreSQL applies policies; buckets have RLS
/// and no policy, as on Supabase: only the service role creates or lists them.
struct SQLiteObjectCatalog: ObjectCatalog {
    let store: Store
    let policy: StoragePolicy

    /// The tables, applied once by `Store.migrator`.
    static let migration = """
        CREATE TABLE IF NOT EXISTS storage_buckets (
          id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, owner TEXT, public INTEGER NOT NULL DEFAULT 0,
          file_size_limit INTEGER, allowed_mime_types TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS storage_objects (
          id TEXT PRIMARY KEY, bucket_id TEXT NOT NULL REFERENCES storage_buckets(id), name TEXT NOT NULL,
          owner TEXT, version TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
          last_accessed_at TEXT NOT NULL, metadata TEXT, UNIQUE (bucket_id, name));
        """

    func createBucket(_ bucket: BucketRow, as who: Principal) async throws {
        guard who.role == .serviceRole else { throw StorageAPIError.rlsViolation }
        let types = bucket.allowedMimeTypes.map { JSONValue($0).text }
        do {
            try await store.pool.write { db in
                try db.execute(sql: """
                    INSERT INTO storage_buckets (id, name, owner, public, file_size_limit, allowed_mime_types, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [bucket.id, bucket.name, bucket.owner, bucket.isPublic, bucket.fileSizeLimit, types,
                                     Timestamps.format(bucket.createdAt), Timestamps.format(bucket.updatedAt)])
            }
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY
                    || error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw StorageAPIError.bucketAlreadyExists
        }
    }

    func buckets(as who: Principal) async throws -> [BucketRow] {
        guard who.role == .serviceRole else { return [] }
        return try await store.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM storage_buckets ORDER BY name").map(Self.bucket)
        }
    }

    func bucket(_ id: String, as who: Principal) async throws -> BucketRow? {
        guard who.role == .serviceRole else { return nil }
        return try await store.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM storage_buckets WHERE id = ?", arguments: [id]).map(Self.bucket)
        }
    }

    func checkWrite(_ row: ObjectRow, upsert: Bool, as who: Principal) async throws {
        _ = try await store.pool.read { db in try allowWrite(row, upsert: upsert, as: who, db) }
    }

    func put(_ row: ObjectRow, upsert: Bool, as who: Principal) async throws -> (id: String, replaced: String?) {
        try await store.pool.write { db in
            let existing = try allowWrite(row, upsert: upsert, as: who, db)
            let (updated, metadata) = (Timestamps.format(row.updatedAt), row.metadata.text)
            if let existing {
                try db.execute(sql: """
                    UPDATE storage_objects SET owner = ?, version = ?, updated_at = ?, last_accessed_at = ?, metadata = ? WHERE id = ?
                    """, arguments: [row.owner, row.version, updated, updated, metadata, existing.id])
                return (existing.id, existing.version)
            }
            try db.execute(sql: """
                INSERT INTO storage_objects (id, bucket_id, name, owner, version, created_at, updated_at, last_accessed_at, metadata)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [row.id, row.bucketID, row.name, row.owner, row.version, Timestamps.format(row.createdAt),
                                 updated, updated, metadata])
            return (row.id, nil)
        }
    }

    func object(bucket: String, name: String, as who: Principal) async throws -> ObjectRow? {
        try await store.pool.read { db in
            guard let row = try find(bucket, name, db), try policy.allows(.select, row.policyObject, as: who, in: db) else { return nil }
            return row
        }
    }

    func delete(bucket: String, names: [String], as who: Principal) async throws -> [ObjectRow] {
        try await store.pool.write { db in
            var gone: [ObjectRow] = []
            for name in Set(names) {
                guard let row = try find(bucket, name, db),
                      try policy.allows(.delete, row.policyObject, as: who, in: db),
                      try policy.allows(.select, row.policyObject, as: who, in: db)
                else { continue }
                try db.execute(sql: "DELETE FROM storage_objects WHERE id = ?", arguments: [row.id])
                gone.append(row)
            }
            return gone.sorted { $0.name < $1.name }
        }
    }

    func objects(bucket: String, prefix: String, limit: Int, as who: Principal) async throws -> [ObjectRow] {
        try await store.pool.read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT * FROM storage_objects WHERE bucket_id = ? AND substr(name, 1, ?) = ? ORDER BY name
                """, arguments: [bucket, prefix.unicodeScalars.count, prefix])
            var out: [ObjectRow] = []
            while out.count < limit, let row = try rows.next() {
                let object = Self.object(row)
                if try policy.allows(.select, object.policyObject, as: who, in: db) { out.append(object) }
            }
            return out
        }
    }

    // MARK: - Pieces

    /// The policy on a write: INSERT's check on the new row; over an existing
    /// row (upsert), as `INSERT … ON CONFLICT DO UPDATE`: SELECT and UPDATE's
    /// USING on the old row, UPDATE's check on the new. Returns the existing row.
    @discardableResult
    private func allowWrite(_ row: ObjectRow, upsert: Bool, as who: Principal, _ db: Database) throws -> ObjectRow? {
        guard try policy.allows(.insert, row.policyObject, as: who, in: db) else { throw StorageAPIError.rlsViolation }
        guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM storage_buckets WHERE id = ?)", arguments: [row.bucketID]) == true
        else { throw StorageAPIError.noSuchBucket }
        guard let existing = try find(row.bucketID, row.name, db) else { return nil }
        guard upsert else { throw StorageAPIError.alreadyExists }
        guard try policy.allows(.select, existing.policyObject, as: who, in: db),
              try policy.allows(.update, existing.policyObject, as: who, in: db),
              try policy.allows(.update, row.policyObject, as: who, in: db)
        else { throw StorageAPIError.rlsViolation }
        return existing
    }

    private func find(_ bucket: String, _ name: String, _ db: Database) throws -> ObjectRow? {
        try Row.fetchOne(db, sql: "SELECT * FROM storage_objects WHERE bucket_id = ? AND name = ?", arguments: [bucket, name]).map(Self.object)
    }

    static func bucket(_ r: Row) -> BucketRow {
        let types = (r["allowed_mime_types"] as String?).flatMap { JSONScanner.parse($0)?.strings }
        return BucketRow(id: r["id"], name: r["name"], owner: r["owner"], isPublic: (r["public"] as Int? ?? 0) != 0,
                         fileSizeLimit: r["file_size_limit"], allowedMimeTypes: types,
                         createdAt: Timestamps.parse(r["created_at"]) ?? .distantPast,
                         updatedAt: Timestamps.parse(r["updated_at"]) ?? .distantPast)
    }

    static func object(_ r: Row) -> ObjectRow {
        ObjectRow(id: r["id"], bucketID: r["bucket_id"], name: r["name"], owner: r["owner"], version: r["version"],
                  createdAt: Timestamps.parse(r["created_at"]) ?? .distantPast,
                  updatedAt: Timestamps.parse(r["updated_at"]) ?? .distantPast, metadata: ObjectMetadata(text: r["metadata"]))
    }
}
