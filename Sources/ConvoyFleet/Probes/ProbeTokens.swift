import ConvoyFormats
import ConvoyJSON
import ConvoySodium
import ConvoyWire
import Foundation

/// Tokens a hostile device can make. Without the project's JWT secret (the
/// usual case: a device never has it) every signature is made with a secret
/// of the attacker's own; with it (tests), `expired` is signed properly, so
/// that only its `exp` can refuse it.
struct ProbeTokens: Sendable {
    var expired: String
    /// The victim's identity (`sub`), signed with a wrong secret.
    var forged: String
    /// `role: service_role`, signed with a wrong secret.
    var forgedService: String
    /// `alg: none`, no signature, the victim's identity.
    var algNone: String
    /// Whether `expired` carries a valid signature (the JWT secret was known).
    var expiredIsSigned: Bool

    init(attackerToken: String, victimID: String, jwtSecret: String?, now: Double = Date().timeIntervalSince1970) throws {
        // The attacker's own claims, as a device can read them from its token.
        var claims = UnverifiedJWT.claims(attackerToken) ?? ["aud": "authenticated", "role": "authenticated"]
        let wrong = Sodium.randomBytes(32)
        var old = claims
        old["iat"] = JSONValue(Int(now) - 7200)
        old["exp"] = JSONValue(Int(now) - 3600)
        expiredIsSigned = jwtSecret != nil
        expired = try Self.hs256(old, key: jwtSecret.map { Array($0.utf8) } ?? wrong)
        claims["sub"] = .string(victimID)
        claims["exp"] = JSONValue(Int(now) + 3600)
        forged = try Self.hs256(claims, key: wrong)
        algNone = Self.segment(["alg": "none", "typ": "JWT"]) + "." + Self.segment(claims) + "."
        var service = claims
        service["role"] = "service_role"
        service.removeValue(forKey: "sub")
        forgedService = try Self.hs256(service, key: wrong)
    }

    static func hs256(_ claims: [String: JSONValue], key: [UInt8]) throws -> String {
        let input = segment(["alg": "HS256", "typ": "JWT"]) + "." + segment(claims)
        return input + "." + base64URL(try HMACSHA256.authenticate(Array(input.utf8), key: key))
    }

    /// A JWT segment: the object's JSON, keys sorted, base64url.
    static func segment(_ object: [String: JSONValue]) -> String {
        base64URL(Array(JSONValue(object).text.utf8))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
