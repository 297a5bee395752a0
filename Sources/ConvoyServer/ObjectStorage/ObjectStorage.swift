import ConvoyJSON
import ConvoyTime
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Supabase Storage's buckets and objects (`/storage/v1`): rows in the store
/// (`ObjectCatalog`, row-level security as Supabase applies it), bytes on disk
/// (`ObjectFiles`), signed URLs (`SignedURLs`). What storage-api's
/// `ObjectStorage` does, in the order it does it: the bucket is looked up as
/// the server (its limits), the write is tried as the requester before any
/// byte is read, the bytes stream to a temporary file, then the row is written
/// as the requester and the file renamed into place.
struct ObjectStorage: Sendable {
    let catalog: any ObjectCatalog
    let files: ObjectFiles
    let signer: SignedURLs
    let clock: any ConvoyClock
    /// The global cap on an object, bytes (`--storage-file-limit`); a bucket's `file_size_limit` can only lower it.
    let sizeLimit: Int
    let logger: Logger

    /// Where the bytes of a SQLite store's objects live: `objectStorageDirectory`,
    /// else beside the database file (`<file>.objects`; in the temporary
    /// directory with the file when there is none, and removed with it).
    static func directory(for configuration: ServerConfiguration, sqlitePath: String) -> URL {
        URL(fileURLWithPath: configuration.objectStorageDirectory ?? sqlitePath + ".objects")
    }

    // MARK: - Buckets

    func createBucket(_ body: JSONValue, as who: Principal) async throws -> String {
        guard let name = body["name"]?.string else { throw StorageAPIError.invalidRequest("body must have required property 'name'") }
        let id = body["id"]?.string.flatMap { $0.isEmpty ? nil : $0 } ?? name
        guard ObjectKey.isValidBucketName(id) else { throw StorageAPIError.invalidBucketName(id) }
        var limit: Int?
        switch body["file_size_limit"] {
        case nil, .null?: limit = nil
        case .number?:
            guard let d = body["file_size_limit"]?.double, d >= 0, d == d.rounded(), let n = Int(exactly: d) else {
                throw StorageAPIError.invalidRequest("body/file_size_limit must be integer or string")
            }
            limit = n
        case .string(let s)?:
            guard let bytes = FileSize.bytes(s), s.rangeOfCharacter(from: .letters) != nil else {
                throw StorageAPIError.invalidRequest("Invalid file size format, hint: use 20GB / 20MB / 30KB / 3B")
            }
            limit = bytes
        default: throw StorageAPIError.invalidRequest("body/file_size_limit must be integer or string")
        }
        let types = body["allowed_mime_types"].flatMap { v -> [String]? in
            guard case .array(let items) = v else { return nil }
            return items.compactMap(\.string).filter { !$0.isEmpty }
        }
        let now = clock.date
        try await catalog.createBucket(BucketRow(id: id, name: name, owner: who.userID, isPublic: body["public"]?.bool ?? false,
                                                 fileSizeLimit: limit == 0 ? nil : limit, allowedMimeTypes: types,
                                                 createdAt: now, updatedAt: now), as: who)
        return name
    }

    // MARK: - Objects

    /// An upload: the object `name` in `bucket`, its bytes from the request,
    /// owned by `owner`, written as `who`. Returns the row as stored.
    func upload(_ request: Request, bucket: String, name: String, owner: String?, upsert: Bool, as who: Principal) async throws -> ObjectRow {
        let now = clock.date
        var row = ObjectRow(id: UUID().uuidString.lowercased(), bucketID: bucket, name: name, owner: owner,
                            version: UUID().uuidString.lowercased(), createdAt: now, updatedAt: now,
                            metadata: ObjectMetadata(mimetype: request.headers[.contentType],
                                                     contentLength: request.headers[.contentLength].flatMap(Int.init)))
        let b: BucketRow
        do {
            _ = try ObjectKey.require(name)
            guard let found = try await catalog.bucket(bucket, as: .service) else { throw StorageAPIError.noSuchBucket }
            b = found
            try await catalog.checkWrite(row, upsert: upsert, as: who)
        } catch let error as StorageAPIError {
            throw error.closing()  // refused before its body was read: what is left of it is not worth reading
        }
        let limit = min(b.fileSizeLimit ?? sizeLimit, sizeLimit)
        let body = try await UploadBody.read(request, limit: limit, allowedMimeTypes: b.allowedMimeTypes, into: files)
        row.metadata = ObjectMetadata(eTag: "\"\(row.version.replacingOccurrences(of: "-", with: ""))\"", size: body.size,
                                      mimetype: body.mimetype, cacheControl: body.cacheControl,
                                      lastModified: Self.httpDate(now), contentLength: body.size, httpStatusCode: 200)
        do {
            try await files.commit(body.file, as: row.version)
        } catch {
            await files.discard(body.file)
            throw error
        }
        do {
            let (id, replaced) = try await catalog.put(row, upsert: upsert, as: who)
            row.id = id
            if let replaced, replaced != row.version { await files.remove(replaced) }
            return row
        } catch {
            await files.remove(row.version)
            throw error
        }
    }

    /// A download's response: the version's bytes streamed from its open file.
    func response(for row: ObjectRow, download: String?) async throws -> Response {
        guard let file = try await files.open(row.version) else {
            logger.warning("storage object without its bytes", metadata: ["bucket": "\(row.bucketID)", "version": "\(row.version)"])
            throw StorageAPIError.noSuchKey
        }
        var headers: HTTPFields = [.contentType: row.metadata.mimetype ?? "application/octet-stream",
                                   .cacheControl: row.metadata.cacheControl ?? "no-cache",
                                   .lastModified: Self.httpDate(row.updatedAt)]
        if let eTag = row.metadata.eTag { headers[.eTag] = eTag }
        if let download {
            let filename = download.isEmpty ? ObjectKey.filename(row.name) : download
            headers[.contentDisposition] = "attachment; filename=\(filename.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "file")"
        }
        let body = ResponseBody(contentLength: file.size) { writer in
            var left = file.size
            while left > 0 {
                let chunk = try await file.read(upTo: min(left, 128 * 1024))
                guard chunk.readableBytes > 0 else { break }
                left -= chunk.readableBytes
                try await writer.write(chunk)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// Deletes the named objects `who` may delete, rows then bytes; returns them.
    func remove(bucket: String, names: [String], as who: Principal) async throws -> [ObjectRow] {
        let gone = try await catalog.delete(bucket: bucket, names: names, as: who)
        for row in gone { await files.remove(row.version) }
        return gone
    }

    /// storage-api's `/object/list` (`storage.search`): the entries one level
    /// below `prefix` that `who` may see, folders (name only, id null) and
    /// files (name relative to the prefix), sorted, paged by `limit` and
    /// `offset`. At most 10,000 objects under the prefix are looked at.
    func list(bucket: String, body: JSONValue, as who: Principal) async throws -> JSONValue {
        guard var prefix = body["prefix"]?.string else { throw StorageAPIError.invalidRequest("body must have required property 'prefix'") }
        if !prefix.isEmpty, !prefix.hasSuffix("/") { prefix += "/" }
        let limit = max(1, Self.count(body["limit"]) ?? 100), offset = max(0, Self.count(body["offset"]) ?? 0)
        let search = body["search"]?.string ?? ""
        let sort = body["sortBy"]
        let descending = sort?["order"]?.string?.lowercased() == "desc"
        let column = sort?["column"]?.string ?? "name"
        var folders: Set<String> = []
        var entries: [(name: String, row: ObjectRow?)] = []
        for row in try await catalog.objects(bucket: bucket, prefix: prefix, limit: 10_000, as: who) {
            let rest = String(row.name.dropFirst(prefix.count))
            guard search.isEmpty || rest.lowercased().hasPrefix(search.lowercased()) else { continue }
            if let slash = rest.firstIndex(of: "/") {
                let folder = String(rest[..<slash])
                if folders.insert(folder).inserted { entries.append((folder, nil)) }
            } else {
                entries.append((rest, row))
            }
        }
        entries.sort { a, b in
            let (x, y) = descending ? (b, a) : (a, b)
            if column != "name", let rx = x.row, let ry = y.row {
                let (dx, dy) = column == "created_at" ? (rx.createdAt, ry.createdAt) : (rx.updatedAt, ry.updatedAt)
                if dx != dy { return dx < dy }
            }
            return x.name < y.name
        }
        return .array(entries.dropFirst(offset).prefix(limit).map { entry in
            guard let row = entry.row else {
                return ["created_at": .null, "id": .null, "last_accessed_at": .null, "metadata": .null, "name": .string(entry.name),
                        "updated_at": .null]
            }
            let (created, updated) = (JSONValue.string(Timestamps.format(row.createdAt)), JSONValue.string(Timestamps.format(row.updatedAt)))
            return ["created_at": created, "id": .string(row.id), "last_accessed_at": updated, "metadata": row.metadata.json,
                    "name": .string(entry.name), "updated_at": updated]
        })
    }

    /// A paging number as storage-api reads one (a fraction is cut); nil when absent or not a number.
    static func count(_ value: JSONValue?) -> Int? {
        value?.double.flatMap { $0.isFinite ? Int(exactly: $0.rounded(.towardZero)) : nil }
    }

    /// The retention hook: deletes objects as the server, rows and bytes, e.g.
    /// for an app's purge of an operation's media. Returns how many went.
    @discardableResult
    func purge(bucket: String, names: [String]) async throws -> Int {
        try await remove(bucket: bucket, names: names, as: .service).count
    }

    static func httpDate(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: date)
    }
}
