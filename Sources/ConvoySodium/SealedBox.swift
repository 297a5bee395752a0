internal import CSodium

/// libsodium's anonymous sealed box: `crypto_box_seal` to a public key, opened
/// only with the matching key pair. 48 bytes of overhead (ephemeral key + MAC).
public enum SealedBox {
    public static let overhead = Int(crypto_box_sealbytes())

    public static func seal(_ message: some Collection<UInt8>, to recipient: PublicKey) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureReady()
        let plain = Array(message)
        var out = [UInt8](repeating: 0, count: plain.count + overhead)
        guard crypto_box_seal(&out, plain, UInt64(plain.count), recipient.bytes) == 0 else {
            throw .badKey("the recipient's public key was refused by crypto_box_seal")
        }
        return out
    }

    /// Opens a sealed box. A wrong key and tampered bytes both fail the one MAC,
    /// so they are one error here: `.cannotOpen`.
    public static func open(_ ciphertext: some Collection<UInt8>, with keyPair: BoxKeyPair) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureReady()
        let sealed = Array(ciphertext)
        guard sealed.count >= overhead else {
            throw .truncated("a sealed box has at least \(overhead) bytes, this one has \(sealed.count)")
        }
        var out = [UInt8](repeating: 0, count: sealed.count - overhead)
        let rc = keyPair.secretKey.withUnsafeBytes { sk in
            crypto_box_seal_open(&out, sealed, UInt64(sealed.count), keyPair.publicKey.bytes,
                                 sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard rc == 0 else {
            throw .cannotOpen("the sealed box does not open with this key pair: it was sealed to another key, or its bytes were changed")
        }
        return out
    }
}
