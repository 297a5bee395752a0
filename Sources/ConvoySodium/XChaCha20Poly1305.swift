internal import CSodium

/// XChaCha20-Poly1305-IETF authenticated encryption (libsodium's
/// `crypto_aead_xchacha20poly1305_ietf_*`): 32-byte key, 24-byte random nonce,
/// 16-byte tag.
public enum XChaCha20Poly1305 {
    public static let keyBytes = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    public static let nonceBytes = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    public static let tagBytes = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    public static func seal(_ plain: [UInt8], associatedData ad: [UInt8], nonce: [UInt8],
                            key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureReady()
        guard key.count == keyBytes, nonce.count == nonceBytes else {
            throw .badKey("XChaCha20-Poly1305 takes a \(keyBytes)-byte key and a \(nonceBytes)-byte nonce")
        }
        var cipher = [UInt8](repeating: 0, count: plain.count + tagBytes)
        var length: UInt64 = 0
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
            &cipher, &length, plain, UInt64(plain.count), ad, UInt64(ad.count), nil, nonce, key)
        return cipher
    }

    /// Throws `.truncated` for less than a tag, `.tampered` when authentication fails.
    public static func open(_ cipher: [UInt8], associatedData ad: [UInt8], nonce: [UInt8],
                            key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureReady()
        guard key.count == keyBytes, nonce.count == nonceBytes else {
            throw .badKey("XChaCha20-Poly1305 takes a \(keyBytes)-byte key and a \(nonceBytes)-byte nonce")
        }
        guard cipher.count >= tagBytes else { throw .truncated("an AEAD ciphertext has at least \(tagBytes) bytes") }
        var plain = [UInt8](repeating: 0, count: cipher.count - tagBytes)
        var length: UInt64 = 0
        let rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
            &plain, &length, nil, cipher, UInt64(cipher.count), ad, UInt64(ad.count), nonce, key)
        guard rc == 0 else { throw .tampered }
        return plain
    }
}
