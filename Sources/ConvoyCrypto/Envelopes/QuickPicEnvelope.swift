import ConvoySodium

/// The QuickPic envelope (quickpic-spec.md, "Encryption Flow"): a random
/// symmetric key encrypts the content with XChaCha20-Poly1305, the key is sealed
/// to the recipient's X25519 key, and the sender signs the whole encrypted blob
/// with Ed25519. The signature is verified before anything is decrypted.
///
/// Byte layout (docs/wire-formats.md):
/// ```
/// 0      1     version (0x01)
/// 1      80    sealed key: crypto_box_seal(K, recipient X25519 public key)
/// 81     24    nonce for XChaCha20-Poly1305-IETF
/// 105    n+16  ciphertext of the content, AD = bytes 0..<81
/// end-64 64    Ed25519 detached signature over every byte before it
/// ```
public enum QuickPicEnvelope {
    public static let version: UInt8 = 1
    static let keyBytes = XChaCha20Poly1305.keyBytes
    static let nonceBytes = XChaCha20Poly1305.nonceBytes
    static let tagBytes = XChaCha20Poly1305.tagBytes
    static let sealedKeyBytes = keyBytes + SealedBox.overhead
    static let headerBytes = 1 + sealedKeyBytes
    /// Size of an envelope with empty content.
    public static let overhead = headerBytes + nonceBytes + tagBytes + Signature.byteCount

    public static func seal(_ content: some Collection<UInt8>, to recipient: PublicKey,
                            signedBy sender: SigningKeyPair) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureReady()
        var key = Sodium.randomBytes(keyBytes)
        defer { key.withUnsafeMutableBytes { Sodium.zero($0) } }
        let nonce = Sodium.randomBytes(nonceBytes)
        return try seal(content, key: key, nonce: nonce, to: recipient, signedBy: sender)
    }

    /// Deterministic form for tests: the caller supplies the symmetric key and nonce.
    static func seal(_ content: some Collection<UInt8>, key: [UInt8], nonce: [UInt8], to recipient: PublicKey,
                     signedBy sender: SigningKeyPair) throws(CryptoError) -> [UInt8] {
        let plain = Array(content)
        var blob: [UInt8] = [version]
        blob += try SealedBox.seal(key, to: recipient)
        let ad = blob
        blob += nonce
        blob += try XChaCha20Poly1305.seal(plain, associatedData: ad, nonce: nonce, key: key)
        blob += sender.sign(blob)
        return blob
    }

    /// Verifies the sender's signature, unwraps the key, decrypts the content.
    ///
    /// Throws `.truncated`, `.unsupportedVersion`, `.badSignature` (changed in
    /// transit or not from this sender), `.wrongKey` (signed correctly but sealed
    /// to another recipient) or `.tampered` (the sender's own blob fails AEAD).
    public static func open(_ blob: some Collection<UInt8>, with recipient: BoxKeyPair,
                            from sender: PublicKey) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureReady()
        let bytes = Array(blob)
        guard bytes.count >= overhead else {
            throw .truncated("a QuickPic envelope has at least \(overhead) bytes, this one has \(bytes.count)")
        }
        guard bytes[0] == version else {
            throw .unsupportedVersion("QuickPic envelope version \(bytes[0]); this build reads version \(version)")
        }
        let signed = bytes[..<(bytes.count - Signature.byteCount)]
        try Signature.verify(bytes[(bytes.count - Signature.byteCount)...], of: signed, by: sender)

        var key: [UInt8]
        do {
            key = try SealedBox.open(bytes[1..<headerBytes], with: recipient)
        } catch {
            throw .wrongKey
        }
        defer { key.withUnsafeMutableBytes { Sodium.zero($0) } }
        guard key.count == keyBytes else { throw .tampered }

        let ad = Array(bytes[..<headerBytes])
        let nonce = Array(bytes[headerBytes..<(headerBytes + nonceBytes)])
        let cipher = Array(signed[(headerBytes + nonceBytes)...])
        return try XChaCha20Poly1305.open(cipher, associatedData: ad, nonce: nonce, key: key)
    }
}
