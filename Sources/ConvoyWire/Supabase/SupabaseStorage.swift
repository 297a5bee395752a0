import ConvoyJSON
import Foundation

/// Supabase Storage (`/storage/v1`), as an app's media goes through it:
/// signed upload URLs and uploads to them, direct uploads, signed download
/// URLs, downloads and removal; buckets with the service key. Bodies go up as
/// they are (storage-api takes a raw body with its Content-Type as well as a
/// form); each result says how many bytes moved and how long it took, and
/// uploads report progress (libcurl's) when asked. Errors are `SupabaseError`s:
/// storage-api answers HTTP 400 with its own `code` (`NoSuchKey`,
/// `EntityTooLarge`, `InvalidJWT`, …) and `message`.
public struct SupabaseStorage: Sendable {
    public let http: SupabaseHTTP

    public init(_ http: SupabaseHTTP) { self.http = http }

    /// A stored object: its `bucket/path` key (and id, for direct uploads),
    /// the bytes of its body and what the transfer measured.
    public struct Upload: Sendable {
        public var key: String
        public var id: String?
        public var bytes: Int
        public var timing: HTTPResponse.Timing
    }

    /// A signed upload URL (`createSignedUploadUrl`): absolute, with its token.
    public struct SignedUpload: Sendable, CustomStringConvertible {
        public var url: String
        public var token: String
        public var bucket: String
        public var path: String
        /// The token is a credential: left out.
        public var description: String { "SignedUpload(\(bucket)/\(path), token redacted)" }
    }

    /// A downloaded object.
    public struct Download: Sendable {
        public var body: [UInt8]
        public var contentType: String?
        public var timing: HTTPResponse.Timing
    }

    /// Creates a bucket (the service role's: buckets have RLS and no policy).
    public func createBucket(_ id: String, public isPublic: Bool = false, fileSizeLimit: Int? = nil, allowedMimeTypes: [String]? = nil,
                             serviceKey: String) async throws(SupabaseError) {
        var body: [String: JSONValue] = ["id": .string(id), "name": .string(id), "public": .bool(isPublic)]
        if let fileSizeLimit { body["file_size_limit"] = JSONValue(fileSizeLimit) }
        if let allowedMimeTypes { body["allowed_mime_types"] = .array(allowedMimeTypes.map(JSONValue.string)) }
        try await http.send("POST", "/storage/v1/bucket", body: SupabaseHTTP.json(JSONValue(body)), token: serviceKey)
    }

    /// Uploads `bytes` to `bucket/path` as `token`'s user (RLS decides);
    /// `upsert` replaces an object already there.
    public func upload(bucket: String, path: String, bytes: [UInt8], contentType: String, upsert: Bool = false, token: String,
                       timeout: Double = 120, progress: (@Sendable (HTTPProgress) -> Void)? = nil) async throws(SupabaseError) -> Upload {
        let r = try await http.send("POST", "/storage/v1/object/\(Self.encode(bucket))/\(try Self.key(path))", body: bytes, token: token,
                                    headers: [("x-upsert", upsert ? "true" : "false"), ("cache-control", "max-age=3600")],
                                    contentType: contentType, timeout: timeout, progress: progress)
        let o = try Self.object(r, "upload")
        guard let key = o["Key"]?.string else { throw SupabaseError(kind: .unexpectedResponse, message: "upload: no Key") }
        return Upload(key: key, id: o["Id"]?.string, bytes: bytes.count, timing: r.timing)
    }

    /// `POST /object/upload/sign/…`: a URL anyone holding it may upload this
    /// one object to, for two hours, checked now against `token`'s RLS.
    public func createSignedUploadURL(bucket: String, path: String, upsert: Bool = false,
                                      token: String) async throws(SupabaseError) -> SignedUpload {
        let r = try await http.send("POST", "/storage/v1/object/upload/sign/\(Self.encode(bucket))/\(try Self.key(path))", token: token,
                                    headers: upsert ? [("x-upsert", "true")] : [])
        let o = try Self.object(r, "upload/sign")
        guard let url = o["url"]?.string, let signed = o["token"]?.string else {
            throw SupabaseError(kind: .unexpectedResponse, message: "upload/sign: no url and token")
        }
        return SignedUpload(url: http.target.url + "/storage/v1" + Self.encodeSigned(url), token: signed, bucket: bucket, path: path)
    }

    /// `PUT` of `bytes` to a signed upload URL: no session needed (the token is the permission).
    public func upload(to signed: SignedUpload, bytes: [UInt8], contentType: String, timeout: Double = 120,
                       progress: (@Sendable (HTTPProgress) -> Void)? = nil) async throws(SupabaseError) -> Upload {
        let path = "/storage/v1/object/upload/sign/\(Self.encode(signed.bucket))/\(try Self.key(signed.path))?token=\(signed.token)"
        let r = try await http.send("PUT", path, body: bytes, headers: [("cache-control", "max-age=3600")], contentType: contentType,
                                    timeout: timeout, progress: progress)
        let o = try Self.object(r, "upload to signed URL")
        guard let key = o["Key"]?.string else { throw SupabaseError(kind: .unexpectedResponse, message: "signed upload: no Key") }
        return Upload(key: key, id: nil, bytes: bytes.count, timing: r.timing)
    }

    /// `POST /object/sign/…`: an absolute URL that downloads the object for
    /// `expiresIn` seconds without a session (RLS decides, now, whether `token` may read it).
    public func createSignedURL(bucket: String, path: String, expiresIn: Int, token: String) async throws(SupabaseError) -> String {
        let r = try await http.send("POST", "/storage/v1/object/sign/\(Self.encode(bucket))/\(try Self.key(path))",
                                    body: SupabaseHTTP.json(["expiresIn": JSONValue(expiresIn)]), token: token)
        guard let url = try Self.object(r, "sign")["signedURL"]?.string else {
            throw SupabaseError(kind: .unexpectedResponse, message: "sign: no signedURL")
        }
        return http.target.url + "/storage/v1" + Self.encodeSigned(url)
    }

    /// Downloads `bucket/path` as `token`'s user (`/object/authenticated/…`).
    public func download(bucket: String, path: String, token: String, timeout: Double = 120) async throws(SupabaseError) -> Download {
        let r = try await http.send("GET", "/storage/v1/object/authenticated/\(Self.encode(bucket))/\(try Self.key(path))", token: token,
                                    timeout: timeout)
        return Download(body: r.body, contentType: r.header("content-type"), timing: r.timing)
    }

    /// Downloads a signed URL as it is: no key, no session.
    public func download(signedURL: String, timeout: Double = 120) async throws(SupabaseError) -> Download {
        let r: HTTPResponse
        do {
            r = try await http.engine.send(HTTPRequest(url: signedURL, timeout: timeout), on: http.connection)
        } catch {
            throw .wire(error)
        }
        guard r.status < 300 else { throw .from(r) }
        return Download(body: r.body, contentType: r.header("content-type"), timing: r.timing)
    }

    /// Removes objects of `bucket` (`DELETE /object/{bucket}` `{prefixes}`);
    /// returns the names removed (those RLS let `token`'s user delete).
    @discardableResult
    public func remove(bucket: String, paths: [String], token: String) async throws(SupabaseError) -> [String] {
        let r = try await http.send("DELETE", "/storage/v1/object/\(Self.encode(bucket))", body: SupabaseHTTP.json(["prefixes": .array(paths.map(JSONValue.string))]),
                                    token: token)
        guard case .array(let rows)? = JSONScanner.parse(r.body) else {
            throw SupabaseError(kind: .unexpectedResponse, message: "remove: not a JSON array")
        }
        return rows.compactMap { $0["name"]?.string }
    }

    // MARK: - Pieces

    /// Characters left as they are in a path segment (RFC 3986 unreserved and
    /// sub-delimiters but `?`, `#`, `%`, `/`).
    private static let segment = CharacterSet(charactersIn:
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@")

    /// A key for a URL path: each segment percent-encoded, the slashes kept.
    static func encode(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.addingPercentEncoding(withAllowedCharacters: segment) ?? String($0) }.joined(separator: "/")
    }

    /// An object key for a URL, refused with dot segments as supabase-py refuses
    /// them (`relative_path_to_parts`): an HTTP client would resolve them away.
    static func key(_ path: String) throws(SupabaseError) -> String {
        guard !path.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == "." || $0 == ".." }) else {
            throw SupabaseError(kind: .wire(.invalidRequest), message: "object keys must not contain dot segments: \(path)")
        }
        return encode(path)
    }

    /// A signed path as storage-api returns it (`/object/sign/bucket/name?token=…`,
    /// the name not encoded): its path encoded, its query kept.
    static func encodeSigned(_ url: String) -> String {
        guard let q = url.firstIndex(of: "?") else { return encode(url) }
        return encode(String(url[..<q])) + url[q...]
    }

    static func object(_ r: HTTPResponse, _ what: String) throws(SupabaseError) -> JSONValue {
        guard let o = JSONScanner.parse(r.body), case .object = o else {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(what): not a JSON object")
        }
        return o
    }
}
