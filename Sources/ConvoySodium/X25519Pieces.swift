internal import CSodium
internal import Crypto

/// The sealed box's two X25519 operations from each library, one at a time, for `make bench`.
package enum X25519Pieces {
    /// A fresh key pair from BoringSSL (its base-point table).
    package static func boringKeyPair() -> Int {
        let k = Curve25519.KeyAgreement.PrivateKey()
        return k.publicKey.rawRepresentation.count
    }

    /// libsodium's `crypto_scalarmult_base` of a fixed scalar.
    package static func sodiumBase(_ scalar: [UInt8]) -> Int {
        var q = [UInt8](repeating: 0, count: 32)
        return Int(crypto_scalarmult_base(&q, scalar)) + Int(q[0])
    }

    /// BoringSSL's shared point of a key pair's secret and a public key.
    package static func boringShared(_ pair: BoxKeyPair, _ peer: PublicKey) -> Int {
        guard let p = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: peer.bytes),
              let s = try? pair.agreementKey.sharedSecretFromKeyAgreement(with: p) else { return -1 }
        return s.withUnsafeBytes { Int($0[0]) }
    }

    /// libsodium's `crypto_scalarmult` of the same.
    package static func sodiumShared(_ pair: BoxKeyPair, _ peer: PublicKey) -> Int {
        var q = [UInt8](repeating: 0, count: 32)
        return pair.secretKey.withUnsafeBytes { sk in
            Int(crypto_scalarmult(&q, sk.bindMemory(to: UInt8.self).baseAddress!, peer.bytes)) + Int(q[0])
        }
    }
}
