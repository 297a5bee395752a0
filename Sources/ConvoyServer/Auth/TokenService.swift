import ConvoyJSON
import ConvoySodium
import ConvoyTime
import Foundation
import JWTKit
import Synchronization

/// Signs and verifies the server's HS256 JWTs (jwt-kit). Anything else — a
/// forged signature, `alg: none`, another algorithm, an expired token — fails.
struct TokenService: Sendable {
    let keys: JWTKeyCollection
    let clock: any ConvoyClock
    let issuer: String
    let ttl: Double
    /// Tokens whose signature has been checked, with their claims: a phone sends the same two (its API key
    /// and its access token) with every request. The expiry is checked at every use, against the clock.
    let verified = VerifiedTokens()

    init(secret: String, clock: any ConvoyClock, issuer: String, ttl: Double) async {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.keys = keys
        self.clock = clock
        self.issuer = issuer
        self.ttl = ttl
    }

    enum Failure: Error, Equatable {
        case invalid(String)
        case expired
    }

    /// An API key (`anon` or `service_role`) valid for ten years.
    func apiKey(role: Principal.Role) async throws -> String {
        let now = Int(clock.wallNow())
        return try await keys.sign(Claims(iss: "convoy", exp: now + 10 * 365 * 86_400, iat: now, role: role.rawValue))
    }

    /// An access token for a user's session.
    func accessToken(userID: String, email: String?, sessionID: String, anonymous: Bool) async throws -> (token: String, expiresAt: Int) {
        let now = Int(clock.wallNow())
        let exp = now + Int(ttl)
        let claims = Claims(iss: issuer, sub: userID, aud: "authenticated", exp: exp, iat: now, email: email ?? "",
                            role: "authenticated", session_id: sessionID, is_anonymous: anonymous)
        return (try await keys.sign(claims), exp)
    }

    /// Verifies the signature and the expiry (against the injected clock).
    func verify(_ token: String) async throws(Failure) -> Claims {
        let claims: Claims
        if let known = verified.claims(of: token) {
            claims = known
        } else {
            // jwt-kit verifies with the key it holds whatever `alg` the header names (an HS512 header over an HS256
            // signature passed); PostgREST and GoTrue verify with the header's algorithm, where such a token fails.
            guard Self.algorithm(of: token) == "HS256" else { throw .invalid("the token's header does not say alg HS256") }
            do {
                claims = try await keys.verify(token, as: Claims.self)
            } catch {
                throw .invalid("\(error)")
            }
            verified.remember(token, claims)
        }
        if let exp = claims.exp, Double(exp) <= clock.wallNow() { throw .expired }
        return claims
    }
}

extension TokenService {
    /// The `alg` a token's header names; nil when its first segment is no base64url JSON object.
    static func algorithm(of token: String) -> String? {
        guard let header = token.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first else { return nil }
        var s = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        guard let data = Data(base64Encoded: s) else { return nil }
        return JSONScanner.parse(Array(data))?["alg"]?.string
    }
}

/// The claims of tokens whose signature verified, by token text; at most `capacity`, forgotten all at once when full.
/// A token's text fixes its signature and claims, so a token found here verifies exactly as it did.
final class VerifiedTokens: Sendable {
    static let capacity = 32_768
    private let known = Mutex<[String: Claims]>([:])

    func claims(of token: String) -> Claims? { known.withLock { $0[token] } }

    func remember(_ token: String, _ claims: Claims) {
        known.withLock { k in
            if k.count >= Self.capacity { k.removeAll(keepingCapacity: true) }
            k[token] = claims
        }
    }

    var count: Int { known.withLock { $0.count } }
}
