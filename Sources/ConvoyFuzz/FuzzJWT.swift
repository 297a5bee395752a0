import ConvoyFormats
import ConvoyJSON
import ConvoyServer
import ConvoySodium
import Foundation

/// A JWT as both ends read one: a phone's `UnverifiedJWT.claims` (its own token, a forged one) and `convoy serve`'s
/// check of every `apikey` and `Authorization` (jwt-kit, HS256, the expiry).
enum FuzzJWT {
    /// The secret the seeds' valid tokens are signed with (Fuzz/Corpus/jwt, made by scripts/fuzz-seeds).
    static let secret = "convoy-fuzz-secret-0123456789abcdef"
    private static let check = Blocking.run { await TokenCheck(secret: secret) }

    static let target = FuzzTarget(
        name: "jwt",
        summary: "JWTs; the server accepts only three base64url segments whose header says HS256 and whose signature is "
            + "the HMAC-SHA-256 of the first two under its secret; UnverifiedJWT's claims are the middle segment's object",
        prepare: { _ = check }
    ) { bytes in
        var inv = Invariants()
        let token = bytes.text
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if let claims = UnverifiedJWT.claims(token) {
            inv.expect(parts.count == 3, "claims read from \(parts.count) segment(s)")
            let middle = parts.count == 3 ? decode(parts[1]).flatMap { JSONScanner.parse($0) } : nil
            if case .object(let members)? = middle {
                inv.expect(Set(members.map(\.key)) == Set(claims.keys), "claims \(claims.keys.sorted()) from an object with \(members.map(\.key))")
            } else {
                inv.expect(false, "claims read from a middle segment that is no JSON object")
            }
        }
        let server = check  // read here: its first read waits for a task, which must not happen on one of the pool's threads
        if Blocking.run({ await server.verifiedRole(token) }) != nil {
            inv.accepted = true
            inv.expect(parts.count == 3, "accepted with \(parts.count) segment(s)")
            if parts.count == 3 {
                let header = decode(parts[0]).flatMap { JSONScanner.parse($0) }
                inv.expect(header?["alg"]?.string == "HS256", "accepted with header \(header?.text ?? "unreadable")")
                let mac = try? HMACSHA256.authenticate(Array("\(parts[0]).\(parts[1])".utf8), key: Array(secret.utf8))
                inv.expect(mac != nil && decode(parts[2]) == mac, "accepted with a signature that is not the secret's")
            }
        }
        return inv
    }

    /// A base64url segment's bytes (padding optional, as jwt-kit reads it); nil when it is not one.
    static func decode(_ segment: String) -> [UInt8]? {
        var s = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !s.contains("=") || s.hasSuffix("=") else { return nil }
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map(Array.init)
    }
}
