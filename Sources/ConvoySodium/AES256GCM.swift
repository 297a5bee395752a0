internal import CSodium

/// AES-256-GCM (libsodium's `crypto_aead_aes256gcm_*`): 32-byte key, 12-byte nonce, 16-byte tag. libsodium
/// offers it only on a CPU with AES-NI (every x86-64 and ARMv8 machine Convoy runs on); elsewhere it says so.
public enum AES256GCM {
    public static let keyBytes = Int(crypto_aead_aes256gcm_KEYBYTES)
    public static let nonceBytes = Int(crypto_aead_aes256gcm_NPUBBYTES)
    public static let tagBytes = Int(crypto_aead_aes256gcm_ABYTES)

    static func ready(_ key: [UInt8], _ nonce: [UInt8]) throws(CryptoError) {
        try Sodium.ensureReady()
        guard crypto_aead_aes256gcm_is_available() == 1 else {
            throw .unsupportedVersion("AES-256-GCM needs a CPU with AES instructions, and this one has none libsodium can use")
        }
        guard key.count == keyBytes, nonce.count == nonceBytes else {
            throw .badKey("AES-256-GCM takes a \(keyBytes)-byte key and a \(nonceBytes)-byte nonce")
        }
    }

    public static func seal(_ plain: [UInt8], associatedData ad: [UInt8], nonce: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try ready(key, nonce)
        var cipher = [UInt8](repeating: 0, count: plain.count + tagBytes)
        var length: UInt64 = 0
        _ = crypto_aead_aes256gcm_encrypt(&cipher, &length, plain, UInt64(plain.count), ad, UInt64(ad.count), nil, nonce, key)
        return cipher
    }

    /// Throws `.truncated` for less than a tag, `.tampered` when authentication fails.
    public static func open(_ cipher: [UInt8], associatedData ad: [UInt8], nonce: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try ready(key, nonce)
        guard cipher.count >= tagBytes else { throw .truncated("an AEAD ciphertext has at least \(tagBytes) bytes") }
        var plain = [UInt8](repeating: 0, count: cipher.count - tagBytes)
        var length: UInt64 = 0
        let rc = crypto_aead_aes256gcm_decrypt(&plain, &length, nil, cipher, UInt64(cipher.count), ad, UInt64(ad.count), nonce, key)
        guard rc == 0 else { throw .tampered }
        return plain
    }
}
