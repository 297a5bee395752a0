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

    /// A fresh key pair: 32 random bytes from libsodium, as `crypto_box_keypair` makes them.
    public init() throws(CryptoError) {
        try Sodium.ensureReady()
        let sk = SecretBytes(capacity: Int(crypto_box_SECRETKEYBYTES)) { sk in
            randombytes_buf(sk.baseAddress!, sk.count)
            return sk.count
        }
        try self.init(secret: sk)
    }

    /// Restores a key pair from its 32-byte secret key; the public key is derived.
    public init(secretKey bytes: [UInt8]) throws(CryptoError) {
        try self.init(secret: SecretBytes(copying: bytes))
    }

    /// Restores a key pair from a roster's standard-Base64 secret key.
    public init(secretKeyBase64: String) throws(CryptoError) {
        try self.init(secret: SecretBytes(base64: secretKeyBase64))
    }

    /// The public key is the agreement key's (X25519 of the clamped secret and the base point,
    /// what `crypto_scalarmult_base` computes), derived once.
    private init(secret sk: SecretBytes) throws(CryptoError) {
        try Sodium.ensureReady()
        guard sk.count == Int(crypto_box_SECRETKEYBYTES) else {
            throw .badKey("an X25519 secret key has 32 bytes, this one has \(sk.count)")
        }
        let agreementKey = try Self.agreementKey(sk)
        self.publicKey = try PublicKey(bytes: Array(agreementKey.publicKey.rawRepresentation))
        self.secretKey = sk
        self.agreementKey = agreementKey
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
