import ConvoySodium
import ConvoyTime
import Foundation
import JWTKit

/// QuickPic's access tokens: HS256 JWTs (jwt-kit) with `sub` (the user), `sid` (the session), `iat`, `exp`
/// and `iss: "quickpic"`. Anything else — another algorithm, `alg: none`, a forged signature, another
/// issuer, an expired token — is refused; expiry is read against the injected clock.
struct QuickPicTokens: Sendable {
    let keys: JWTKeyCollection
    let clock: any ConvoyClock
    /// Access-token lifetime, seconds (the spec's 15 minutes unless `--token-ttl`).
    let ttl: Double

    static let issuer = "quickpic"

    init(secret: String, clock: any ConvoyClock, ttl: Double) async {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        (self.keys, self.clock, self.ttl) = (keys, clock, ttl)
    }

    struct Claims: JWTPayload, Equatable {
        var sub: String
        var sid: String
        var iat: Int
        var exp: Int
        var iss: String

        /// jwt-kit checks the signature; the rest is `verify(_:)`'s, against the injected clock.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    func accessToken(userID: String, sessionID: String) async throws -> (token: String, expiresAt: Int) {
        let now = Int(clock.wallNow())
        let exp = now + Int(ttl)
        return (try await keys.sign(Claims(sub: userID, sid: sessionID, iat: now, exp: exp, iss: Self.issuer)), exp)
    }

    /// The claims of a valid token; nil for anything else.
    func verify(_ token: String) async -> Claims? {
        guard let claims = try? await keys.verify(token, as: Claims.self), claims.iss == Self.issuer,
              Double(claims.exp) > clock.wallNow(), QuickPicIDs.isUUID(claims.sub), QuickPicIDs.isUUID(claims.sid)
        else { return nil }
        return claims
    }

    /// A weakened server's reading (`unverified-tokens`): the claims as the token states them, unchecked.
    static func unverified(_ token: String) -> Claims? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var s = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        guard let data = Data(base64Encoded: s), let claims = try? JSONDecoder().decode(Claims.self, from: data),
              QuickPicIDs.isUUID(claims.sub), QuickPicIDs.isUUID(claims.sid) else { return nil }
        return claims
    }

    /// A new refresh token (32 random bytes, base64url) and the hash the store keeps of it.
    static func refreshToken() -> (token: String, hash: String) {
        let token = Data(Sodium.randomBytes(32)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return (token, hash(token))
    }

    /// What the store keeps of a refresh token: its SHA-256, hex (a stolen database holds no usable token).
    static func hash(_ token: String) -> String {
        SHA256Digest.hex(Array(token.utf8))
    }
}

/// QuickPic's ids: UUIDs as lowercase text.
enum QuickPicIDs {
    static func make() -> String { UUID().uuidString.lowercased() }

    /// A UUID in its canonical text form (any case); what a path or body id must be before it reaches the store.
    static func isUUID(_ text: String) -> Bool {
        text.utf8.count == 36 && UUID(uuidString: text) != nil
    }
}
