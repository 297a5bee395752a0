internal import CSodium

/// HMAC-SHA-256 (libsodium's `crypto_auth_hmacsha256`, any key length): what
/// an HS256 JWT signature is. Convoy uses it to make tokens a hostile device
/// could forge (its own secret, or none), never to issue real ones.
public enum HMACSHA256 {
    public static let byteCount = 32

    public static func authenticate(_ message: some Collection<UInt8>, key: some Collection<UInt8>) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureReady()
        var state = crypto_auth_hmacsha256_state()
        defer { withUnsafeMutableBytes(of: &state) { Sodium.zero($0) } }
        let k = Array(key), m = Array(message)
        var out = [UInt8](repeating: 0, count: byteCount)
        let keyCount = k.count
        _ = (k.isEmpty ? [0] : k).withUnsafeBufferPointer { crypto_auth_hmacsha256_init(&state, $0.baseAddress!, keyCount) }
        let count = UInt64(m.count)
        _ = (m.isEmpty ? [0] : m).withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress!, count) }
        _ = out.withUnsafeMutableBufferPointer { crypto_auth_hmacsha256_final(&state, $0.baseAddress!) }
        return out
    }
}
