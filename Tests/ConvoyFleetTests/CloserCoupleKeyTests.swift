@testable import ConvoyFleet
import ConvoySodium
import Foundation
import Testing

/// Closer's couple key as the manual's Android phones make and open it: Argon2id at m=46080 KiB, t=3, p=1 over
/// the recovery phrase, AES-256-GCM with the AAD `closer_couple_key`, the phrase sealed with the invite code.
@Suite struct CloserCoupleKeyTests {
    /// The wrapping key for a fixed phrase and salt, as the reference implementation derives it (argon2-cffi's
    /// `hash_secret_raw`, type ID, time_cost 3, memory_cost 46080, parallelism 1, 32 bytes): the limits are the
    /// manual's, in its units (KiB), not libsodium's bytes by mistake.
    @Test func argon2idAtTheManualsLimitsMatchesTheReference() throws {
        let key = try CloserCoupleKey.kdf.deriveKey(password: Array("bak dil fon gat hek jit kol lan mit nok".utf8), salt: Array(0..<16))
        #expect(key.map { String(format: "%02x", $0) }.joined() == "49108b72a1fb2ce93ab3ae216848fc9a8c4bda78ea6bec584af45b09489de7e4")
        #expect(CloserCoupleKey.kdfParams == "argon2id:m=46080,t=3,p=1")
    }

    @Test func theAcceptorUnwrapsTheInvitersKeyWithTheCodeAndNothingElse() throws {
        let made = try CloserCoupleKey.make(code: "Ab3xYz")
        #expect(made.phrase.split(separator: " ").count == 10 && Set(CloserCoupleKey.words).count == 256)
        #expect(Data(base64Encoded: made.salt)?.count == 16 && made.key.count == 32)
        let opened = try CloserCoupleKey.unwrap(wrappedKey: made.wrappedKey, salt: made.salt, params: CloserCoupleKey.kdfParams,
                                                encryptedPhrase: made.encryptedPhrase, code: "Ab3xYz")
        #expect(opened == made.key)
        // Another code, another salt, other parameters: no key.
        #expect(throws: CryptoError.self) {
            _ = try CloserCoupleKey.unwrap(wrappedKey: made.wrappedKey, salt: made.salt, params: CloserCoupleKey.kdfParams,
                                           encryptedPhrase: made.encryptedPhrase, code: "Ab3xYZ")
        }
        #expect(throws: CryptoError.self) {
            _ = try CloserCoupleKey.unwrap(wrappedKey: made.wrappedKey, salt: Data(Array(repeating: UInt8(1), count: 16)).base64EncodedString(),
                                           params: CloserCoupleKey.kdfParams, encryptedPhrase: made.encryptedPhrase, code: "Ab3xYz")
        }
        #expect(throws: CryptoError.self) {
            _ = try CloserCoupleKey.unwrap(wrappedKey: made.wrappedKey, salt: made.salt, params: "argon2id:m=65536,t=3,p=1",
                                           encryptedPhrase: made.encryptedPhrase, code: "Ab3xYz")
        }
        // Two invites: two keys, two phrases.
        let other = try CloserCoupleKey.make(code: "Ab3xYz")
        #expect(other.key != made.key && other.phrase != made.phrase && other.salt != made.salt)
    }
}
