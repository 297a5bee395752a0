import ConvoyJSON
import Foundation

/// A JWT's claims as it states them, signature unchecked: what a phone reads of its own token (its uid), what a
/// probe copies into a forged one, what a server weakened on purpose trusts. Never an authorisation.
public enum UnverifiedJWT {
    /// The payload's claims; nil when `token` is not three base64url segments with a JSON object in the middle.
    public static func claims(_ token: String) -> [String: JSONValue]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var s = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        guard let data = Data(base64Encoded: s), case .object(let members)? = JSONScanner.parse(Array(data)) else { return nil }
        var claims: [String: JSONValue] = [:]
        for m in members { claims[m.key] = m.value }
        return claims
    }
}
