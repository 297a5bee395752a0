internal import CSodium
internal import Crypto

/// An X25519 key pair for `crypto_box_seal` (Green Box, and the QuickPic key wrap).
/// The secret key is zeroed when the pair is released and never printed.
public struct BoxKeyPair: Sendable, CustomStringConvertible {
    public let publicKey: PublicKey
    public let secretKey: SecretBytes
    /// The same secret as BoringSSL's X25519 key, made once: `SealedBox.open`
    /// agrees with it (its copy of the secret is zeroed when released, too).
    let agreementKey: Curve25519.KeyAgreement.PrivateKey

    /// A fresh key pair (`crypto_box_keypair`).
    public init() throws(CryptoError) {
        try Sodium.ensureReady()
        var pk = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        let sk = SecretBytes(capacity: Int(crypto_box_SECRETKEYBYTES)) { sk in
            _ = crypto_box_keypair(&pk, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            return sk.count
        }
        self.publicKey = try PublicKey(bytes: pk)
        self.secretKey = sk
        self.agreementKey = try Self.agreementKey(sk)
    }

    /// Restores a key pair from its 32-byte secret key; the public key is derived.
    public init(secretKey bytes: [UInt8]) throws(CryptoError) {
        try self.init(secret: SecretBytes(copying: bytes))
    }

    /// Restores a key pair from a roster's standard-Base64 secret key.
    public init(secretKeyBase64: String) throws(CryptoError) {
        try self.init(secret: SecretBytes(base64: secretKeyBase64))
    }

    private init(secret sk: SecretBytes) throws(CryptoError) {
        try Sodium.ensureReady()
        guard sk.count == Int(crypto_box_SECRETKEYBYTES) else {
            throw .badKey("an X25519 secret key has 32 bytes, this one has \(sk.count)")
        }
        var pk = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        let rc = sk.withUnsafeBytes { crypto_scalarmult_base(&pk, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        guard rc == 0 else { throw .badKey("the secret key is not a usable X25519 scalar") }
        self.publicKey = try PublicKey(bytes: pk)
        self.secretKey = sk
        self.agreementKey = try Self.agreementKey(sk)
    }

    private static func agreementKey(_ sk: SecretBytes) throws(CryptoError) -> Curve25519.KeyAgreement.PrivateKey {
        do {
            return try sk.withUnsafeBytes { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: $0) }
        } catch {
            throw .badKey("the secret key is not a usable X25519 scalar")
        }
    }

    public var description: String { "BoxKeyPair(public: \(publicKey.base64), secret: redacted)" }
}
