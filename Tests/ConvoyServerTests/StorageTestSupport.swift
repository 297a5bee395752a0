import ConvoyJSON
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GRDB
import Testing
@testable import ConvoyServer

extension TestServer {
    /// A Storage request: `body` sent as it is with `contentType` (none by
    /// default), or `json`; `token` as the bearer (the service key by default;
    /// nil sends none); the anon `apikey` unless `apikey` is false.
    func storage(_ method: String, _ path: String, body: Data? = nil, json: Any? = nil, contentType: String? = nil,
                 token: String?? = .some(nil), apikey: Bool = true, headers: [String: String] = [:]) async throws -> Reply {
        var req = URLRequest(url: URL(string: keys.url + "/storage/v1" + path)!)
        req.httpMethod = method
        if apikey { req.setValue(keys.anonKey, forHTTPHeaderField: "apikey") }
        switch token {
        case .none: break
        case .some(nil): req.setValue("Bearer \(keys.serviceRoleKey)", forHTTPHeaderField: "Authorization")
        case .some(let t?): req.setValue("Bearer \(t)", forHTTPHeaderField: "Authorization")
        }
        if let json {
            req.httpBody = try JSONSerialization.data(withJSONObject: json)
            req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        } else if let body {
            req.httpBody = body
            req.setValue(contentType ?? "application/octet-stream", forHTTPHeaderField: "Content-Type")
        }
        for (k, v) in headers { req.setValue(v, forHTTPHeaderField: k) }
        let (data, response) = try await URLSession.shared.data(for: req)
        let http = response as! HTTPURLResponse
        var h: [String: String] = [:]
        for (k, v) in http.allHeaderFields { h[String(describing: k).lowercased()] = String(describing: v) }
        return Reply(status: http.statusCode, headers: h, body: data)
    }

    /// A Storage request sent byte for byte (no client normalises `..` away), as
    /// the service role, with `Connection: close`: its status and body.
    func rawStorage(_ method: String, _ path: String, body: String = "") async throws -> Reply {
        let client = try RawClient(keys.url)
        _ = client.send("\(method) /storage/v1\(path) HTTP/1.1\r\nHost: localhost\r\napikey: \(keys.anonKey)\r\n"
                        + "Authorization: Bearer \(keys.serviceRoleKey)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        let (text, _) = await client.readText(within: 10)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let status = parts.first?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return Reply(status: status, headers: [:], body: Data(parts.dropFirst().joined(separator: "\r\n\r\n").utf8))
    }

    /// Creates a bucket with the service key.
    func createBucket(_ id: String, public isPublic: Bool = false, limit: Any? = nil, types: [String]? = nil) async throws {
        var body: [String: Any] = ["id": id, "name": id, "public": isPublic]
        if let limit { body["file_size_limit"] = limit }
        if let types { body["allowed_mime_types"] = types }
        let r = try await storage("POST", "/bucket", json: body)
        #expect(r.status == 200 && r.object["name"] as? String == id, "create bucket: \(r.text)")
    }

    /// The object files on disk (every stored version) and the uploads under way.
    var storedFiles: (objects: Int, partial: Int) {
        let root = server.objects.files.root
        let count = { (dir: String) in (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(dir).path).count) ?? -1 }
        return (count("objects"), count("tmp"))
    }
}

extension TestServer.Reply {
    var text: String { String(decoding: body, as: UTF8.self) }

    /// A storage-api error: HTTP 400 with `statusCode`, `code`, `error`, `message` in the body.
    func isStorageError(_ statusCode: String, _ code: String, httpStatus: Int = 400) -> Bool {
        status == httpStatus && object["statusCode"] as? String == statusCode && object["code"] as? String == code
            && object["error"] is String && object["message"] is String
    }
}

/// `multipart/form-data` as httpx (supabase-py) writes it: fields first, then the file.
enum Multipart {
    static let boundary = "convoy-test-boundary-7d41"
    static var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    static func form(fields: [(String, String)] = [("cacheControl", "3600")], filename: String = "photo.jpg",
                     type: String = "image/jpeg", file: Data) -> Data {
        var out = Data()
        for (name, value) in fields {
            out += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
        }
        out += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(filename)\"\r\nContent-Type: \(type)\r\n\r\n".utf8)
        out += file
        out += Data("\r\n--\(boundary)--\r\n".utf8)
        return out
    }
}

/// Green Box with a Storage policy, as Survale's will be: in bucket
/// `op-media`, a user uploads, replaces and deletes under a folder named by
/// their id, and reads there and in the folders of their active friends (a
/// membership looked up in the database). `StorageTestPolicy.sql` is the
/// same policy in SQL for PostgreSQL.
struct StoragePolicyApp: ServerApp {
    let base = GreenBoxServer()
    var name: String { base.name }
    var schema: Schema { base.schema }
    func policies(strict: Bool) -> Policies { base.policies(strict: strict) }
    var sqliteMigrations: [SQLiteMigration] { base.sqliteMigrations }
    func rpc(_ name: String, _ args: [String: JSONValue], as who: Principal, in context: SQLiteAppContext) async throws -> JSONValue? {
        try await base.rpc(name, args, as: who, in: context)
    }
    func purge(before cutoff: Date, now: Date, in context: SQLiteAppContext) async throws -> Int {
        try await base.purge(before: cutoff, now: now, in: context)
    }
    var postgresFolder: String { base.postgresFolder }
    var postgresFiles: [String] { base.postgresFiles }
    func postgresChoices(_ configuration: ServerConfiguration) -> [PostgresChoice] { base.postgresChoices(configuration) }
    func postgresSettings(_ configuration: ServerConfiguration) -> [String: String] { base.postgresSettings(configuration) }
    func postgresPurge(retention: Double, has: (String) -> Bool) -> String { base.postgresPurge(retention: retention, has: has) }
    var supabaseOptions: [(option: String, values: [String])] { base.supabaseOptions }
    func supabaseSQL(_ options: [String: String]) throws -> String { try base.supabaseSQL(options) }

    var storagePolicy: StoragePolicy {
        StoragePolicy { action, object, who, db in
            guard object.bucketID == "op-media", let uid = who.userID, let folder = object.folders.first else { return false }
            if folder == uid { return true }
            guard action == .select else { return false }
            return try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM friendships WHERE status = 'active'
                  AND ((user_id_1 = ? AND user_id_2 = ?) OR (user_id_1 = ? AND user_id_2 = ?)))
                """, arguments: [uid, folder, folder, uid]) ?? false
        }
    }
}

enum StorageTestPolicy {
    static let sql = """
        CREATE POLICY op_media_insert ON storage.objects FOR INSERT TO authenticated
          WITH CHECK (bucket_id = 'op-media' AND (storage.foldername(name))[1] = auth.uid()::text);
        CREATE POLICY op_media_update ON storage.objects FOR UPDATE TO authenticated
          USING (bucket_id = 'op-media' AND (storage.foldername(name))[1] = auth.uid()::text)
          WITH CHECK (bucket_id = 'op-media' AND (storage.foldername(name))[1] = auth.uid()::text);
        CREATE POLICY op_media_delete ON storage.objects FOR DELETE TO authenticated
          USING (bucket_id = 'op-media' AND (storage.foldername(name))[1] = auth.uid()::text);
        CREATE POLICY op_media_select ON storage.objects FOR SELECT TO authenticated
          USING (bucket_id = 'op-media' AND ((storage.foldername(name))[1] = auth.uid()::text OR EXISTS (
            SELECT 1 FROM public.friendships f WHERE f.status = 'active'
              AND ((f.user_id_1 = auth.uid() AND f.user_id_2::text = (storage.foldername(name))[1])
                OR (f.user_id_2 = auth.uid() AND f.user_id_1::text = (storage.foldername(name))[1])))));
        """

    /// A `--migrations` folder holding the policy.
    static func folder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-storage-policy-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try sql.write(to: dir.appendingPathComponent("100_storage_policy.sql"), atomically: true, encoding: .utf8)
        return dir.path
    }
}
