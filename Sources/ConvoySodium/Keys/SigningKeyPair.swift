internal import CSodium

/// An Ed25519 key pair (`crypto_sign`), used by the QuickPic envelope to sign
/// the whole encrypted blob. The secret key is zeroed on release.
public struct SigningKeyPair: Sendable, CustomStringConvertible {
    public let publicKey: PublicKey
    public let secretKey: SecretBytes

    public init() throws(CryptoError) {
        try Sodium.ensureReady()
        var pk = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        let sk = SecretBytes(capacity: Int(crypto_sign_SECRETKEYBYTES)) { sk in
            _ = crypto_sign_keypair(&pk, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            return sk.count
        }
        self.publicKey = try PublicKey(bytes: pk)
        self.secretKey = sk
    }

    /// Restores a key pair from its 32-byte seed (PyNaCl's `SigningKey(seed)`).
    public init(seed: [UInt8]) throws(CryptoError) {
        try Sodium.ensureReady()
        guard seed.count == Int(crypto_sign_SEEDBYTES) else {
            throw .badKey("an Ed25519 seed has 32 bytes, this one has \(seed.count)")
        }
        var pk = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        let sk = SecretBytes(capacity: Int(crypto_sign_SECRETKEYBYTES)) { sk in
            _ = crypto_sign_seed_keypair(&pk, sk.baseAddress!.assumingMemoryBound(to: UInt8.self), seed)
            return sk.count
        }
        self.publicKey = try PublicKey(bytes: pk)
        self.secretKey = sk
    }

    /// A detached signature over `message`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        secretKey.withUnsafeBytes { sk in
            _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count),
                                     sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return signature
    }

    public var description: String { "SigningKeyPair(public: \(publicKey.base64), secret: redacted)" }
}

/// Signature verification with a sender's Ed25519 public key.
public enum Signature {
    public static let byteCount = Int(crypto_sign_BYTES)

    public static func verify(_ signature: some Collection<UInt8>, of message: some Collection<UInt8>,
                              by publicKey: PublicKey) throws(CryptoError) {
        try Sodium.ensureReady()
        let sig = Array(signature), msg = Array(message)
        guard sig.count == byteCount,
              crypto_sign_verify_detached(sig, msg, UInt64(msg.count), publicKey.bytes) == 0
        else { throw .badSignature }
    }
}
