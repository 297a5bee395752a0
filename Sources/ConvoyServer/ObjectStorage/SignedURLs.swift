import ConvoyJSON
import ConvoyTime
import Foundation
import JWTKit

/// Signed-URL tokens as storage-api makes them (src/storage/object.ts
/// `signObjectUrl`, `signUploadObjectUrl`, `verifyObjectSignature`): HS256
/// JWTs signed with the project's JWT secret, whose `url` is `bucket/name`,
/// with `iat`, `exp` and `scope` (`download` or `upload`); upload tokens also
/// carry the requester as `owner` (absent for the service role) and `upsert`.
/// Tokens without `scope` (made before storage-api had it) are told apart as it
/// does: an upload token is one with an `upsert` claim.
struct SignedURLs: Sendable {
    let keys: JWTKeyCollection
    let clock: any ConvoyClock

    /// How long a signed upload URL lives: two hours, as Supabase documents
    /// (`createSignedUploadUrl`; storage-api's `UPLOAD_SIGNED_URL_EXPIRATION_TIME`).
    static let uploadLifetime = 7200
    /// storage-api's bound on `exp`: `Number.MAX_SAFE_INTEGER / 1000` (src/internal/auth/jwt.ts).
    static let maxExp = 9_007_199_254_740

    enum Scope: String, Sendable { case download, upload }

    struct Payload: JWTPayload, Equatable {
        var url: String
        var scope: String?
        var owner: String?
        var upsert: Bool?
        var iat: Int?
        var exp: Int?

        /// Expiry is checked against the server's injected clock, not here.
        func verify(using algorithm: some JWTAlgorithm) throws {}

        /// `isUploadScopedToken` / `isDownloadScopedToken`.
        func allows(_ wanted: Scope) -> Bool {
            switch wanted {
            case .upload: scope == Scope.upload.rawValue || (scope == nil && upsert != nil)
            case .download: scope == Scope.download.rawValue || (scope == nil && upsert == nil)
            }
        }
    }

    /// `expiresIn` as storage-api takes it: an integer of seconds, ≥ 1 (a numeric
    /// string too: supabase-py sends `"60"`, which fastify's schema coerces).
    func expiresIn(_ value: JSONValue?) throws(StorageAPIError) -> Int {
        let number: Double?
        switch value {
        case .number?: number = value?.double
        case .string(let s)?: number = Double(s.trimmingCharacters(in: .whitespaces))
        case nil: throw .invalidRequest("body must have required property 'expiresIn'")
        default: number = nil
        }
        guard let number, number.isFinite, number == number.rounded(.down), number >= 1,
              number <= Double(Self.maxExp) - clock.wallNow().rounded(.down)
        else { throw .invalidParameter("expiresIn") }
        return Int(number)
    }

    /// `/object/sign/bucket/name?token=…`, valid for `expiresIn` seconds. The
    /// path is not percent-encoded, as storage-api writes it (clients encode it).
    func download(bucket: String, name: String, expiresIn: Int) async throws -> String {
        let url = "\(bucket)/\(name)"
        return "/object/sign/\(url)?token=\(try await sign(Payload(url: url, scope: Scope.download.rawValue), for: expiresIn))"
    }

    /// `{url: /object/upload/sign/bucket/name?token=…, token}`.
    func upload(bucket: String, name: String, owner: String?, upsert: Bool) async throws -> (url: String, token: String) {
        let url = "\(bucket)/\(name)"
        let token = try await sign(Payload(url: url, scope: Scope.upload.rawValue, owner: owner, upsert: upsert), for: Self.uploadLifetime)
        return ("/object/upload/sign/\(url)?token=\(token)", token)
    }

    /// The token's claims when it was signed by this project for `scope` on
    /// `bucket/name` and has not expired; else storage-api's error: 400
    /// `InvalidJWT` (not a JWT, a bad signature, expired: jose's messages) or
    /// `InvalidSignature` (another scope, another object).
    func verify(_ token: String?, bucket: String, name: String, scope: Scope) async throws(StorageAPIError) -> Payload {
        guard let token, !token.isEmpty else { throw .invalidRequest("querystring must have required property 'token'") }
        let payload: Payload
        do {
            payload = try await keys.verify(token, as: Payload.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw .invalidJWT("signature verification failed")
        } catch {
            throw .invalidJWT("Invalid Compact JWS")
        }
        guard payload.allows(scope) else { throw StorageAPIError(400, "InvalidSignature", "Token is not scoped for \(scope.rawValue)") }
        guard payload.url == "\(bucket)/\(name)" else { throw .invalidSignature }
        guard let exp = payload.exp, Double(exp) > clock.wallNow() else {
            throw .invalidJWT("\"exp\" claim timestamp check failed")
        }
        return payload
    }

    private func sign(_ payload: Payload, for seconds: Int) async throws -> String {
        var p = payload
        let now = Int(clock.wallNow())
        p.iat = now
        p.exp = now + seconds
        return try await keys.sign(p)
    }
}
