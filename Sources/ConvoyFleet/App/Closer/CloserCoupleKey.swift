import ConvoySodium
import Foundation

/// Closer's couple key as the manual's Android inviter makes it (closer-engineering-manual.md, "Couple key wrapping
/// with Argon2id", "Recovery phrase flow", "Pairing flow" steps 1–4 and 9–11): a fresh 32-byte AES-256-GCM key
/// (the keyset's key material; Tink's keyset framing is not reproduced), a 10-word recovery phrase from a
/// 256-word list (80 bits), Argon2id(phrase, 16-byte salt, m=46080 KiB, t=3, p=1) → the wrapping key, the key
/// sealed with AES-256-GCM and the fixed AAD `closer_couple_key`; the phrase sealed with the invite code. The
/// acceptor opens the phrase with the code, derives the same wrapping key and unwraps the same couple key.
///
/// Two things the manual leaves open are Convoy's choice, said here: the word list (its 256 words are not
/// given: `words` are 256 consonant–vowel–consonant syllables), and how `encryptPhraseWithCode` keys its
/// AES-256-GCM (SHA-256 of `closer_phrase_code:` and the code).
struct CloserCoupleKey: Sendable, Equatable {
    /// The manual's Argon2id limits: "Do not change these parameters without auditing cross-platform compatibility."
    static let kdf = PasswordHash(operations: 3, memoryBytes: 46_080 * 1024)
    static let kdfParams = "argon2id:m=46080,t=3,p=1"
    static let aad = Array("closer_couple_key".utf8)

    /// 16 consonants × 4 vowels × 4 final consonants: 256 words, 8 bits each.
    static let words: [String] = {
        let (first, vowels, last) = (Array("bdfghjklmnprstvz"), Array("aeio"), Array("klnt"))
        return first.flatMap { c in vowels.flatMap { v in last.map { String([c, v, $0]) } } }
    }()

    /// The couple key, and what the inviter sends to `createInviteCallable` (Base64, as the app writes them).
    var key: [UInt8]
    var phrase: String
    var wrappedKey: String
    var salt: String
    var encryptedPhrase: String

    /// `make(code:)` off the async pool, at low priority (`LowPriorityWork`): Argon2id holds a core for a tenth of
    /// a second and 46 MiB, which a phone spends of its own; here it must not stall the other phones' timers or
    /// the calls the run times (at 20 arrivals a second on 2 cores the derivations alone would take both).
    static func makeOffPool(code: String) async throws(CryptoError) -> CloserCoupleKey {
        try await LowPriorityWork.shared.run { () throws(CryptoError) in try make(code: code) }
    }

    /// `unwrap` off the async pool, at low priority (see `makeOffPool`).
    static func unwrapOffPool(wrappedKey: String, salt: String, params: String, encryptedPhrase: String, code: String) async throws(CryptoError) -> [UInt8] {
        try await LowPriorityWork.shared.run { () throws(CryptoError) in
            try unwrap(wrappedKey: wrappedKey, salt: salt, params: params, encryptedPhrase: encryptedPhrase, code: code)
        }
    }

    /// A new couple key for an invite with `code`.
    static func make(code: String) throws(CryptoError) -> CloserCoupleKey {
        let key = Sodium.randomBytes(AES256GCM.keyBytes)
        let phrase = Sodium.randomBytes(10).map { words[Int($0)] }.joined(separator: " ")
        let salt = Sodium.randomBytes(16)
        let wrapping = try kdf.deriveKey(password: Array(phrase.utf8), salt: salt)
        return CloserCoupleKey(key: key, phrase: phrase, wrappedKey: try seal(key, key: wrapping, aad: aad),
                               salt: Data(salt).base64EncodedString(),
                               encryptedPhrase: try seal(Array(phrase.utf8), key: codeKey(code), aad: Array(code.utf8)))
    }

    /// The acceptor's side: the phrase opened with the code, the wrapping key derived at `params`, the couple key unwrapped.
    static func unwrap(wrappedKey: String, salt: String, params: String, encryptedPhrase: String, code: String) throws(CryptoError) -> [UInt8] {
        guard params == kdfParams else { throw .unsupportedVersion("kdfParams \(params), not the manual's \(kdfParams)") }
        guard let salt = Data(base64Encoded: salt).map(Array.init), salt.count == 16 else { throw .badBase64 }
        let phrase = try open(encryptedPhrase, key: codeKey(code), aad: Array(code.utf8))
        return try open(wrappedKey, key: try kdf.deriveKey(password: phrase, salt: salt), aad: aad)
    }

    static func codeKey(_ code: String) throws(CryptoError) -> [UInt8] { SHA256Digest.hash(Array("closer_phrase_code:\(code)".utf8)) }

    /// nonce ‖ ciphertext ‖ tag, Base64.
    static func seal(_ plain: [UInt8], key: [UInt8], aad: [UInt8]) throws(CryptoError) -> String {
        let nonce = Sodium.randomBytes(AES256GCM.nonceBytes)
        return Data(nonce + (try AES256GCM.seal(plain, associatedData: aad, nonce: nonce, key: key))).base64EncodedString()
    }

    static func open(_ text: String, key: [UInt8], aad: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let bytes = Data(base64Encoded: text).map(Array.init) else { throw .badBase64 }
        guard bytes.count >= AES256GCM.nonceBytes + AES256GCM.tagBytes else { throw .truncated }
        return try AES256GCM.open(Array(bytes.dropFirst(AES256GCM.nonceBytes)), associatedData: aad,
                                  nonce: Array(bytes.prefix(AES256GCM.nonceBytes)), key: key)
    }
}
