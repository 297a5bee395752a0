internal import CSodium

/// Argon2id password hashing (libsodium `crypto_pwhash_str`), in the encoded
/// PHC form `$argon2id$v=19$m=…,t=…,p=1$salt$hash` that carries its own cost.
///
/// The cost is a setting: `interactive` is libsodium's recommendation for
/// logins; a load test that signs up thousands of devices a second uses
/// `minimum`, which is still Argon2id but costs microseconds, not 100 ms.
public struct PasswordHash: Hashable, Sendable {
    public var operations: Int
    public var memoryBytes: Int

    public init(operations: Int, memoryBytes: Int) {
        self.operations = operations
        self.memoryBytes = memoryBytes
    }

    /// libsodium's interactive limits: 2 passes, 64 MiB.
    public static let interactive = PasswordHash(operations: Int(crypto_pwhash_OPSLIMIT_INTERACTIVE),
                                                 memoryBytes: Int(crypto_pwhash_MEMLIMIT_INTERACTIVE))
    /// The smallest limits libsodium allows: 1 pass, 8 KiB. For load tests.
    public static let minimum = PasswordHash(operations: Int(crypto_pwhash_opslimit_min()),
                                             memoryBytes: Int(crypto_pwhash_memlimit_min()))

    /// The encoded hash of `password`, with a fresh random salt.
    public func hash(_ password: String) throws(CryptoError) -> String {
        try Sodium.ensureReady()
        var out = [CChar](repeating: 0, count: Int(crypto_pwhash_STRBYTES))
        let length = UInt64(password.utf8.count)
        let rc = password.withCString { p in
            crypto_pwhash_str_alg(&out, p, length, UInt64(operations), memoryBytes, crypto_pwhash_ALG_ARGON2ID13)
        }
        guard rc == 0 else { throw .badKey("Argon2id refused the limits (out of memory?)") }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A `length`-byte key from `password` and a 16-byte `salt` with Argon2id v1.3 at these limits (libsodium
    /// `crypto_pwhash`; its memory limit is in bytes: KiB × 1024).
    public func deriveKey(length: Int = 32, password: [UInt8], salt: [UInt8]) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureReady()
        guard salt.count == Int(crypto_pwhash_SALTBYTES) else { throw .badKey("Argon2id takes a \(crypto_pwhash_SALTBYTES)-byte salt") }
        var out = [UInt8](repeating: 0, count: length)
        let chars = password.map { CChar(bitPattern: $0) } + [0]
        let rc = crypto_pwhash(&out, UInt64(length), chars, UInt64(password.count), salt, UInt64(operations), memoryBytes, crypto_pwhash_ALG_ARGON2ID13)
        guard rc == 0 else { throw .badKey("Argon2id refused the limits (out of memory?)") }
        return out
    }

    /// True when `password` matches `encoded` (constant time in libsodium).
    public static func verify(_ password: String, against encoded: String) -> Bool {
        guard (try? Sodium.ensureReady()) != nil else { return false }
        let length = UInt64(password.utf8.count)
        return encoded.withCString { e in
            password.withCString { p in crypto_pwhash_str_verify(e, p, length) == 0 }
        }
    }
}
