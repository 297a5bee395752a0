import ConvoyJSON
import ConvoyTime
import Foundation
import HTTPTypes
import Hummingbird

/// `/storage/v1`: the part of storage-api (src/http/routes/bucket, object)
/// that supabase-py and supabase-js call to create buckets and to upload,
/// sign, download, list and remove objects. One route per method takes every
/// path and dispatches on its segments, so a literal (`sign`, `list`,
/// `authenticated`) wins over a bucket of that name, as fastify's router does.
/// Who asks is the `Authorization` bearer token (the `apikey` without one);
/// a token that does not verify is storage-api's `AccessDenied`.
struct ObjectStorageRoutes: Sendable {
    let storage: ObjectStorage
    let support: RequestSupport

    func add(to router: Router<ClientRequestContext>) {
        for method in [HTTPRequest.Method.get, .post, .put, .delete] {
            router.on("storage/v1/**", method: method) { request, _ in
                try await dispatch(request)
            }
        }
    }

    /// The words after `/object/` that name routes rather than buckets.
    static let reserved: Set<String> = ["sign", "upload", "list", "list-v2", "authenticated", "public", "info", "move", "copy"]

    /// Signed URLs and public objects are open without an `apikey`, as
    /// Supabase's gateway lets them through (a browser fetches them as they are).
    static func isOpen(_ request: Request) -> Bool {
        let path = request.uri.path
        switch request.method {
        case .get: return path.hasPrefix("/storage/v1/object/sign/") || path.hasPrefix("/storage/v1/object/public/")
        case .put: return path.hasPrefix("/storage/v1/object/upload/sign/")
        default: return false
        }
    }

    private func dispatch(_ request: Request) async throws -> Response {
        let raw = request.uri.path.dropFirst("/storage/v1/".count).split(separator: "/", omittingEmptySubsequences: false)
        let s = raw.map(String.init)
        /// The object name after `from` segments: percent-decoded, joined by `/`.
        func name(_ from: Int) throws(StorageAPIError) -> (bucket: String, name: String) {
            guard s.count > from + 1, let bucket = ObjectKey.decode(raw[from]), !bucket.isEmpty,
                  let name = ObjectKey.decode(raw[(from + 1)...].joined(separator: "/")[...])
            else { throw notFound(request) }
            return (bucket, name)
        }
        let query = request.uri.queryParameters
        switch (request.method, s.first ?? "") {
        case (.post, "bucket") where s.count == 1:
            let body = try await object(request)
            return JSONResponse.make(.ok, ["name": .string(try await storage.createBucket(body, as: try await principal(request)))])
        case (.get, "bucket") where s.count == 1:
            return JSONResponse.make(.ok, .array(try await storage.catalog.buckets(as: try await principal(request)).map(\.json)))
        case (.get, "bucket") where s.count == 2:
            let id = ObjectKey.decode(raw[1]) ?? ""
            guard let b = try await storage.catalog.bucket(id, as: try await principal(request)) else { throw StorageAPIError.noSuchBucket }
            return JSONResponse.make(.ok, b.json)
        case (_, "object"):
            break
        default:
            throw notFound(request)
        }
        let action = s.count > 1 ? s[1] : ""
        switch (request.method, action) {
        case (.post, "sign") where s.count > 3:
            let (bucket, key) = try name(2)
            let expiresIn = try storage.signer.expiresIn(try await object(request)["expiresIn"])
            guard try await storage.catalog.object(bucket: bucket, name: try ObjectKey.require(key), as: try await principal(request)) != nil
            else { throw StorageAPIError.noSuchKey }
            return JSONResponse.make(.ok, ["signedURL": .string(try await storage.signer.download(bucket: bucket, name: key, expiresIn: expiresIn))])
        case (.get, "sign") where s.count > 3:
            let (bucket, key) = try name(2)
            _ = try await storage.signer.verify(query["token"].map(String.init), bucket: bucket, name: key, scope: .download)
            guard let row = try await storage.catalog.object(bucket: bucket, name: try ObjectKey.require(key), as: .service)
            else { throw StorageAPIError.noSuchKey }
            return try await storage.response(for: row, download: query["download"].map(String.init))
        case (.post, "upload") where s.count > 4 && s[2] == "sign":
            let (bucket, key) = try name(3)
            let who = try await principal(request)
            let upsert = request.headers[.xUpsert] == "true"
            let probe = ObjectRow(id: UUID().uuidString.lowercased(), bucketID: bucket, name: try ObjectKey.require(key), owner: who.userID,
                                  version: "check", createdAt: storage.clock.date, updatedAt: storage.clock.date,
                                  metadata: ObjectMetadata(mimetype: request.headers[.contentType]))
            guard try await storage.catalog.bucket(bucket, as: .service) != nil else { throw StorageAPIError.noSuchBucket }
            try await storage.catalog.checkWrite(probe, upsert: upsert, as: who)
            let signed = try await storage.signer.upload(bucket: bucket, name: key, owner: who.userID, upsert: upsert)
            return JSONResponse.make(.ok, ["token": .string(signed.token), "url": .string(signed.url)])
        case (.put, "upload") where s.count > 4 && s[2] == "sign":
            let (bucket, key) = try name(3)
            let token = try await verifyUpload(query["token"].map(String.init), bucket: bucket, name: key)
            _ = try await storage.upload(request, bucket: bucket, name: key, owner: token.owner, upsert: token.upsert ?? false, as: .service)
            return JSONResponse.make(.ok, ["Key": .string("\(bucket)/\(key)")])
        case (.post, "list") where s.count == 3:
            let bucket = ObjectKey.decode(raw[2]) ?? ""
            return JSONResponse.make(.ok, try await storage.list(bucket: bucket, body: try await object(request), as: try await principal(request)))
        case (.get, "authenticated") where s.count > 3, (.get, "public") where s.count > 3:
            let (bucket, key) = try name(2)
            return try await download(request, bucket: bucket, key: key, publicRoute: action == "public")
        case (_, let word) where Self.reserved.contains(word):
            throw notFound(request)  // a route of storage-api's that this server does not have
        case (.get, _) where s.count > 2:
            let (bucket, key) = try name(1)
            return try await download(request, bucket: bucket, key: key, publicRoute: false)
        case (.post, _) where s.count > 2, (.put, _) where s.count > 2:
            let (bucket, key) = try name(1)
            let who = try await principal(request, closing: true)
            let upsert = request.method == .put || request.headers[.xUpsert] == "true"
            let row = try await storage.upload(request, bucket: bucket, name: key, owner: who.userID, upsert: upsert, as: who)
            return JSONResponse.make(.ok, ["Id": .string(row.id), "Key": .string("\(bucket)/\(row.name)")])
        case (.delete, _) where s.count == 2:
            let bucket = ObjectKey.decode(raw[1]) ?? ""
            guard let prefixes = try await object(request)["prefixes"]?.strings, !prefixes.isEmpty
            else { throw StorageAPIError.invalidRequest("body/prefixes must be a non-empty array of strings") }
            let gone = try await storage.remove(bucket: bucket, names: prefixes, as: try await principal(request))
            return JSONResponse.make(.ok, .array(gone.map(\.json)))
        default:
            throw notFound(request)
        }
    }

    /// storage-api's `getObject`: a bucket missing, or private to a request
    /// without a user, is `NoSuchBucket`; in a public bucket the object is read
    /// as the server, in a private one under the requester's RLS.
    private func download(_ request: Request, bucket: String, key: String, publicRoute: Bool) async throws -> Response {
        let who = try await principal(request, allowInvalid: !request.uri.path.contains("/object/authenticated/"))
        let key = try ObjectKey.require(key)
        guard let b = try await storage.catalog.bucket(bucket, as: .service), b.isPublic || (!publicRoute && who.role != .anon) else {
            throw StorageAPIError.noSuchBucket
        }
        guard let row = try await storage.catalog.object(bucket: bucket, name: key, as: b.isPublic ? .service : who) else {
            throw StorageAPIError.noSuchKey
        }
        return try await storage.response(for: row, download: request.uri.queryParameters["download"].map(String.init))
    }

    /// Who asks: the bearer token's principal (the `apikey`'s without one).
    /// A token that does not verify is `AccessDenied` with jose's message, or
    /// anonymous where storage-api allows an invalid JWT (`allowInvalid`).
    private func principal(_ request: Request, allowInvalid: Bool = false, closing: Bool = false) async throws(StorageAPIError) -> Principal {
        func denied(_ message: String) -> StorageAPIError {
            closing ? StorageAPIError.accessDenied(message).closing() : .accessDenied(message)
        }
        let bearer = request.headers[.authorization].flatMap { h -> String? in
            let parts = h.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "bearer" ? String(parts[1]) : nil
        }
        guard let token = bearer ?? support.apikey(request) else {
            if allowInvalid { return .anonymous }
            throw denied("No authorization header was provided")
        }
        let claims: Claims
        do {
            claims = try await support.tokens.verify(token)
        } catch {
            if allowInvalid { return .anonymous }
            throw denied(error == .expired ? "\"exp\" claim timestamp check failed" : "signature verification failed")
        }
        guard let who = Principal(claims: claims) else {
            if allowInvalid { return .anonymous }
            throw denied("Access denied: Invalid role")
        }
        return who
    }

    /// An upload token's claims; a refusal closes the connection (the body is not read).
    private func verifyUpload(_ token: String?, bucket: String, name: String) async throws -> SignedURLs.Payload {
        do {
            return try await storage.signer.verify(token, bucket: bucket, name: name, scope: .upload)
        } catch {
            throw error.closing()
        }
    }

    /// The body as a JSON object (storage-api's JSON bodies are small: the server's body limit applies).
    private func object(_ request: Request) async throws -> JSONValue {
        let value: JSONValue
        do {
            value = try await support.json(request)
        } catch let error as APIError where error.status == .contentTooLarge {
            throw StorageAPIError.entityTooLarge.closing()
        } catch {
            throw StorageAPIError.invalidRequest("Body is not valid JSON")
        }
        guard case .object = value else { throw StorageAPIError.invalidRequest("body must be object") }
        return value
    }

    /// storage-api's answer to a route it does not have (a real 404).
    private func notFound(_ request: Request) -> StorageAPIError {
        StorageAPIError(404, "InvalidRequest", error: "Not Found", "Route \(request.method.rawValue):\(request.uri.path) not found",
                        httpStatus: .notFound)
    }
}

extension HTTPField.Name {
    static let xUpsert = HTTPField.Name("x-upsert")!
}
