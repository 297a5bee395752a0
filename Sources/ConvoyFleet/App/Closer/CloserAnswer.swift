import ConvoyJSON
import ConvoySodium
import Foundation

/// A sealed answer as the manual's Android phone writes it (closer-engineering-manual.md, "Sealed-answer partner-proof
/// mode"): the answer's canonical JSON (keys sorted, no spaces) committed with SHA-256 (`sha256:…`), sealed with a
/// one-time AES-256-GCM key (`sealed:v1:` nonce ‖ ciphertext ‖ tag, AAD `coupleId|questionId|userId`); the key, once
/// both partners have answered, wrapped to the partner's P-256 device key with Tink's ECIES (`keybox:v1:`, context
/// `coupleId|questionId|senderUserId|recipientUserId`). Convoy's answer carries its sequence number and send time.
struct CloserAnswer: Sendable, Equatable {
    var questionId: String
    var text: String
    var seq: UInt64
    var sentNanos: Int64

    /// The canonical JSON the commitment is over: keys in order, no whitespace.
    var canonical: [UInt8] {
        Array(JSONValue.object([.init("answer", .string(text)), .init("questionId", .string(questionId)),
                                .init("sentNanos", .number(String(sentNanos))), .init("seq", .number(String(seq)))]).text.utf8)
    }

    static func parse(_ bytes: [UInt8]) throws(CryptoError) -> CloserAnswer {
        guard let o = JSONScanner.parse(bytes), let q = o["questionId"]?.string, let text = o["answer"]?.string,
              let seq = o["seq"]?.flatText.flatMap({ UInt64($0) }), let sent = o["sentNanos"]?.flatText.flatMap({ Int64($0) }) else {
            throw CryptoError.badJSON("the decrypted answer is not Closer's answer JSON")
        }
        return CloserAnswer(questionId: q, text: text, seq: seq, sentNanos: sent)
    }

    /// What the author writes (`encryptedPayload`, `commitmentHash`) and keeps until the reveal (the one-time key).
    struct Sealed: Sendable {
        var payload: String
        var commitment: String
        var key: [UInt8]
    }

    static func aad(couple: String, question: String, user: String) -> [UInt8] { Array("\(couple)|\(question)|\(user)".utf8) }
    static func context(couple: String, question: String, from sender: String, to recipient: String) -> [UInt8] {
        Array("\(couple)|\(question)|\(sender)|\(recipient)".utf8)
    }

    func seal(couple: String, user: String) throws(CryptoError) -> Sealed {
        let key = Sodium.randomBytes(AES256GCM.keyBytes), nonce = Sodium.randomBytes(AES256GCM.nonceBytes)
        let cipher = try AES256GCM.seal(canonical, associatedData: Self.aad(couple: couple, question: questionId, user: user), nonce: nonce, key: key)
        return Sealed(payload: "sealed:v1:" + Self.urlBase64(nonce + cipher), commitment: Self.commitment(canonical), key: key)
    }

    static func commitment(_ canonical: [UInt8]) -> String { "sha256:" + urlBase64(SHA256Digest.hash(canonical)) }

    /// The reveal: the partner's payload opened with the key it released, its commitment checked.
    static func reveal(payload: String, commitment: String, key: [UInt8], couple: String, question: String, author: String) throws(CryptoError) -> CloserAnswer {
        guard payload.hasPrefix("sealed:v1:"), let bytes = fromURLBase64(String(payload.dropFirst(10))),
              bytes.count >= AES256GCM.nonceBytes + AES256GCM.tagBytes else { throw CryptoError.badBase64 }
        let plain = try AES256GCM.open(Array(bytes.dropFirst(AES256GCM.nonceBytes)), associatedData: aad(couple: couple, question: question, user: author),
                                       nonce: Array(bytes.prefix(AES256GCM.nonceBytes)), key: key)
        guard Self.commitment(plain) == commitment else { throw CryptoError.badJSON("the decrypted answer does not match its commitment") }
        return try parse(plain)
    }

    /// The one-time key wrapped for `recipient`'s P-256 point.
    static func keybox(_ key: [UInt8], to point: [UInt8], context: [UInt8]) throws(CryptoError) -> String {
        "keybox:v1:" + urlBase64(try ECIESP256.seal(key, to: point, context: context))
    }

    static func openKeybox(_ box: String, with keys: ECIESP256.KeyPair, context: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard box.hasPrefix("keybox:v1:"), let bytes = fromURLBase64(String(box.dropFirst(10))) else { throw CryptoError.badBase64 }
        return try ECIESP256.open(bytes, with: keys, context: context)
    }

    /// `pub:v1:` and the uncompressed point.
    static func publicKeyText(_ point: [UInt8]) -> String { "pub:v1:" + urlBase64(point) }
    static func point(_ text: String) -> [UInt8]? {
        guard text.hasPrefix("pub:v1:"), let p = fromURLBase64(String(text.dropFirst(7))), ECIESP256.isPoint(p) else { return nil }
        return p
    }

    /// URL-safe Base64 without padding, the manual's wire formats'.
    static func urlBase64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func fromURLBase64(_ text: String) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.utf8.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map(Array.init)
    }
}
