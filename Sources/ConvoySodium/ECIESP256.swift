internal import Crypto
internal import FoundationEssentials

/// Tink's hybrid encryption `ECIES_P256_HKDF_HMAC_SHA256_AES128_GCM`, the primitive Closer's phones wrap one-time
/// answer keys with (closer-engineering-manual.md, "ECIES P-256 details"), on swift-crypto's P-256, HKDF and
/// AES-GCM. A fresh ephemeral P-256 key per message; the KEM bytes are its uncompressed point (65 bytes);
/// the AES-128-GCM key is HKDF-SHA256(ikm: KEM bytes ‖ ECDH x-coordinate, salt: empty, info: the context);
/// the ciphertext is KEM bytes ‖ 12-byte IV ‖ AES-GCM ciphertext ‖ 16-byte tag. That is Tink's RAW output:
/// a keyset's 5-byte key-id prefix is not written (Convoy has no Tink keysets). Checked against Tink's own
/// Python implementation (ECIESP256Tests).
public enum ECIESP256 {
    /// The uncompressed point's length: 0x04 ‖ x ‖ y.
    public static let pointBytes = 65
    static let ivBytes = 12
    static let tagBytes = 16
    /// What a message adds to its plaintext.
    public static let overhead = pointBytes + ivBytes + tagBytes

    /// A device's key pair: the private scalar stays on the phone, the uncompressed public point is published.
    public struct KeyPair: Sendable {
        let key: P256.KeyAgreement.PrivateKey

        public init() { key = P256.KeyAgreement.PrivateKey() }

        /// From a 32-byte big-endian scalar (a test's fixed key).
        public init(scalar: [UInt8]) throws(CryptoError) {
            do { key = try P256.KeyAgreement.PrivateKey(rawRepresentation: scalar) } catch {
                throw .badKey("a P-256 private key is a 32-byte scalar below the group order")
            }
        }

        /// The public point, uncompressed (65 bytes).
        public var publicPoint: [UInt8] { Array(key.publicKey.x963Representation) }
    }

    /// Whether `point` is an uncompressed point on P-256.
    public static func isPoint(_ point: [UInt8]) -> Bool {
        point.count == pointBytes && (try? P256.KeyAgreement.PublicKey(x963Representation: point)) != nil
    }

    /// `plain` for the holder of `recipient`'s private key, bound to `context` (Tink's contextInfo).
    public static func seal(_ plain: [UInt8], to recipient: [UInt8], context: [UInt8]) throws(CryptoError) -> [UInt8] {
        let peer: P256.KeyAgreement.PublicKey
        do { peer = try P256.KeyAgreement.PublicKey(x963Representation: recipient) } catch {
            throw .badKey("not an uncompressed P-256 point")
        }
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let kem = Array(ephemeral.publicKey.x963Representation)
        let key = try symmetricKey(kem: kem, shared: try agree(ephemeral, peer), context: context)
        do {
            let box = try AES.GCM.seal(plain, using: key, nonce: AES.GCM.Nonce())
            return kem + Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw .badKey("AES-128-GCM: \(error)")
        }
    }

    /// Opens what `seal` made for `keys` with the same `context`.
    public static func open(_ cipher: [UInt8], with keys: KeyPair, context: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard cipher.count >= overhead else { throw .truncated("an ECIES P-256 message has at least \(overhead) bytes") }
        let kem = Array(cipher.prefix(pointBytes))
        let ephemeral: P256.KeyAgreement.PublicKey
        do { ephemeral = try P256.KeyAgreement.PublicKey(x963Representation: kem) } catch { throw .cannotOpen("the KEM bytes are not a P-256 point") }
        let key = try symmetricKey(kem: kem, shared: try agree(keys.key, ephemeral), context: context)
        let rest = cipher.dropFirst(pointBytes)
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: rest.prefix(ivBytes)), ciphertext: rest.dropFirst(ivBytes).dropLast(tagBytes),
                                            tag: rest.suffix(tagBytes))
            return Array(try AES.GCM.open(box, using: key))
        } catch {
            throw .tampered
        }
    }

    static func agree(_ mine: P256.KeyAgreement.PrivateKey, _ theirs: P256.KeyAgreement.PublicKey) throws(CryptoError) -> [UInt8] {
        do { return try mine.sharedSecretFromKeyAgreement(with: theirs).withUnsafeBytes { Array($0) } } catch {
            throw .badKey("P-256 key agreement failed")
        }
    }

    static func symmetricKey(kem: [UInt8], shared: [UInt8], context: [UInt8]) throws(CryptoError) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: kem + shared), salt: [UInt8](), info: context, outputByteCount: 16)
    }
}
