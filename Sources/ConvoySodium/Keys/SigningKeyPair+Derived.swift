internal import CSodium

extension SigningKeyPair {
    /// The Ed25519 key pair an app derives from a device's X25519 key pair, so one secret (the box key
    /// kept in the keychain) yields both: seed = HMAC-SHA-256(key: the X25519 secret key, message:
    /// `context`). A reinstall's new box key is a new signing key too. A third party with a roster's
    /// secret key derives the same (PyNaCl: `hmac.new(sk, context, sha256)`, then `SigningKey(seed)`).
    public init(derivedFrom box: BoxKeyPair, context: String) throws(CryptoError) {
        try Sodium.ensureReady()
        var state = crypto_auth_hmacsha256_state()
        var seed = [UInt8](repeating: 0, count: Int(crypto_sign_SEEDBYTES))
        defer {
            withUnsafeMutableBytes(of: &state) { Sodium.zero($0) }
            seed.withUnsafeMutableBytes { Sodium.zero($0) }
        }
        box.secretKey.withUnsafeBytes { key in
            _ = crypto_auth_hmacsha256_init(&state, key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count)
        }
        let message = Array(context.utf8)
        _ = (message.isEmpty ? [0] : message).withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress!, UInt64(message.count)) }
        _ = seed.withUnsafeMutableBufferPointer { crypto_auth_hmacsha256_final(&state, $0.baseAddress!) }
        try self.init(seed: seed)
    }
}
