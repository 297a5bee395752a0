import ConvoyFormats
import ConvoyJSON
import ConvoySodium
import ConvoyTime
import Foundation
import JWTKit

/// Closer's Firebase ID tokens, as the Auth emulator makes them in shape: `iss`
/// `https://securetoken.google.com/<project>`, `aud` the project, `sub` and `user_id` the uid, `iat`, `exp`
/// (an hour) — signed HS256 with the server's secret (Firebase signs RS256 with Google's keys; nothing of
/// Closer's pairing depends on which). Anything else, an expired token included, is refused.
struct CloserTokens: Sendable {
    let keys: JWTKeyCollection
    let clock: any ConvoyClock
    let ttl: Double
    let project: String

    init(secret: String, clock: any ConvoyClock, ttl: Double, project: String) async {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        (self.keys, self.clock, self.ttl, self.project) = (keys, clock, ttl, project)
    }

    var issuer: String { "https://securetoken.google.com/\(project)" }

    struct Claims: JWTPayload, Equatable {
        var iss: String
        var aud: String
        var sub: String
        var user_id: String
        var iat: Int
        var exp: Int
        var auth_time: Int

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    func idToken(uid: String) async throws -> String {
        let now = Int(clock.wallNow())
        return try await keys.sign(Claims(iss: issuer, aud: project, sub: uid, user_id: uid, iat: now, exp: now + Int(ttl), auth_time: now))
    }

    /// The uid of a valid token; nil for anything else.
    func verify(_ token: String) async -> String? {
        guard let c = try? await keys.verify(token, as: Claims.self), c.iss == issuer, c.aud == project,
              Double(c.exp) > clock.wallNow(), !c.sub.isEmpty, c.sub == c.user_id else { return nil }
        return c.sub
    }

    /// A weakened server's reading (`unverified-tokens`): the `sub` the token states, unchecked.
    static func unverifiedSubject(_ token: String) -> String? { UnverifiedJWT.claims(token)?["sub"]?.string }

    /// A new refresh token and the hash the store keeps of it.
    static func refreshToken() -> (token: String, hash: String) {
        let token = "AMf-" + Data(Sodium.randomBytes(48)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return (token, SHA256Digest.hex(Array(token.utf8)))
    }
}
