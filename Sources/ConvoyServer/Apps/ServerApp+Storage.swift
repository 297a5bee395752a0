import GRDB

/// Supabase Storage's row-level security on `storage.objects`, as an app
/// states it for the SQLite store (on PostgreSQL it writes `CREATE POLICY …
/// ON storage.objects` in its SQL, and PostgreSQL decides).
///
/// The rule is asked as PostgreSQL would evaluate a policy: `select` (USING)
/// for an object read, listed, signed for download, or returned by a delete;
/// `insert` (WITH CHECK) for the row an upload or a signed upload URL would
/// write; `update` for an upsert over an existing object (asked of the old row
/// and of the new one); `delete` (USING) for a removal. The service role and
/// signed-URL tokens never ask (they act as the server). Without a rule, as a
/// Supabase project with RLS enabled on `storage.objects` and no policy,
/// nothing is allowed to `anon` or `authenticated`.
///
/// An app's rule reads the object's bucket and name (`folders` is
/// `storage.foldername(name)`), who asks, and the SQLite database to look up
/// membership, e.g. "members of the operation named by the first folder may
/// read and upload":
///
///     StoragePolicy { action, object, who, db in
///         guard object.bucketID == "op-media", let uid = who.userID, let op = object.folders.first else { return false }
///         return try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM members WHERE op_id = ? AND user_id = ?)",
///                                  arguments: [op, uid]) ?? false
///     }
struct StoragePolicy: Sendable {
    enum Action: String, Sendable { case select, insert, update, delete }

    /// A row of `storage.objects`, as stored or as it would be written.
    struct Object: Sendable, Equatable {
        var bucketID: String
        var name: String
        /// The uploader's user id (`owner_id`); nil for the service role's.
        var owner: String?
        /// `metadata->>'size'` and `metadata->>'mimetype'` (nil before the bytes are in).
        var size: Int?
        var mimetype: String?

        /// `storage.foldername(name)`.
        var folders: [String] { ObjectKey.folders(name) }
        /// `storage.filename(name)`.
        var filename: String { ObjectKey.filename(name) }
        /// `storage.extension(name)`.
        var fileExtension: String { ObjectKey.fileExtension(name) }
    }

    typealias Rule = @Sendable (_ action: Action, _ object: Object, _ who: Principal, _ db: Database) throws -> Bool

    let rule: Rule?

    init(_ rule: Rule?) { self.rule = rule }

    /// No policy: only the service role (and signed URLs) reach objects.
    static let none = StoragePolicy(nil)

    /// Whether `who` may do `action` on `object`: always for the service role,
    /// else what the rule says (nothing without one).
    func allows(_ action: Action, _ object: Object, as who: Principal, in db: Database) throws -> Bool {
        if who.role == .serviceRole { return true }
        guard let rule else { return false }
        return try rule(action, object, who, db)
    }
}

extension ServerApp {
    /// By default an app keeps Storage to the service role and signed URLs
    /// (Green Box stores no media).
    var storagePolicy: StoragePolicy { .none }
}

extension SQLiteAppContext {
    /// The retention hook for an app's purge on SQLite: deletes objects as the
    /// server, rows and bytes (e.g. an operation's media 7 days after it ended).
    /// Returns how many went. (On PostgreSQL: `ReferenceServer.removeObjects`.)
    @discardableResult
    func removeObjects(bucket: String, names: [String]) async throws -> Int {
        let files = ObjectFiles(root: ObjectStorage.directory(for: configuration, sqlitePath: store.path))
        let gone = try await SQLiteObjectCatalog(store: store, policy: .none).delete(bucket: bucket, names: names, as: .service)
        for row in gone { await files.remove(row.version) }
        return gone.count
    }

    /// Every object whose name starts with `prefix` (a folder: `"op-42/"`), as `removeObjects(bucket:names:)`.
    @discardableResult
    func removeObjects(bucket: String, prefix: String) async throws -> Int {
        let catalog = SQLiteObjectCatalog(store: store, policy: .none)
        var removed = 0
        while true {
            let names = try await catalog.objects(bucket: bucket, prefix: prefix, limit: 1000, as: .service).map(\.name)
            guard !names.isEmpty else { return removed }
            removed += try await removeObjects(bucket: bucket, names: names)
        }
    }
}
