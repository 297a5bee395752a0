internal import CSodium

/// SHA-256 (libsodium's `crypto_hash_sha256`): what a server keeps of a bearer secret it must recognise but
/// need not know (QuickPic's refresh tokens), so a copy of its database holds no usable token.
public enum SHA256Digest {
    public static let byteCount = 32

    public static func hash(_ message: some Collection<UInt8>) -> [UInt8] {
        _ = try? Sodium.ensureReady()
        let m = Array(message)
        var out = [UInt8](repeating: 0, count: byteCount)
        _ = (m.isEmpty ? [0] : m).withUnsafeBufferPointer { crypto_hash_sha256(&out, $0.baseAddress!, UInt64(m.count)) }
        return out
    }

    /// The digest as lowercase hex.
    public static func hex(_ message: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(2 * byteCount)
        for b in hash(message) {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
