import ConvoySodium
import Foundation

/// A QuickPic message as the spec's data model stores it (quickpic-spec.md, "Data Models": `encrypted_content`,
/// `content_type`, `signature`): the envelope of `QuickPicEnvelope` split in two. `encrypted_content` is the
/// envelope's body (version | sealed key | nonce | ciphertext); `signature` is the sender's Ed25519 detached
/// signature over exactly those bytes, the spec's "sign encrypted blob". Both are base64 on the wire.
///
/// Where the spec is silent (docs/wire-formats.md): `content_type` is not signed (the spec signs the blob
/// alone), so a server could relabel a message; the phone checks what it decrypts against the label (an
/// image is gzip). The signing key is a second key pair (Ed25519), published with the user beside its
/// X25519 `public_key` as `signing_key`.
public struct QuickPicMessage: Sendable, Equatable {
    public enum ContentType: String, Sendable, Codable, CaseIterable {
        case text, image
    }

    public var encryptedContent: [UInt8]
    public var contentType: ContentType
    public var signature: [UInt8]

    public init(encryptedContent: [UInt8], contentType: ContentType, signature: [UInt8]) {
        (self.encryptedContent, self.contentType, self.signature) = (encryptedContent, contentType, signature)
    }

    /// Seals `content` to `recipient` and signs it as `sender`.
    public static func seal(_ content: some Collection<UInt8>, contentType: ContentType, to recipient: PublicKey,
                            signedBy sender: SigningKeyPair) throws(CryptoError) -> QuickPicMessage {
        split(try QuickPicEnvelope.seal(content, to: recipient, signedBy: sender), contentType)
    }

    /// Deterministic form for tests.
    static func seal(_ content: some Collection<UInt8>, contentType: ContentType, key: [UInt8], nonce: [UInt8], to recipient: PublicKey,
                     signedBy sender: SigningKeyPair) throws(CryptoError) -> QuickPicMessage {
        split(try QuickPicEnvelope.seal(content, key: key, nonce: nonce, to: recipient, signedBy: sender), contentType)
    }

    private static func split(_ blob: [UInt8], _ contentType: ContentType) -> QuickPicMessage {
        QuickPicMessage(encryptedContent: Array(blob.dropLast(Signature.byteCount)), contentType: contentType,
                        signature: Array(blob.suffix(Signature.byteCount)))
    }

    /// Verifies the signature over `encrypted_content` first, then unwraps the key and decrypts; the errors
    /// are `QuickPicEnvelope.open`'s (a signature not 64 bytes long is `.badSignature`).
    public func open(with recipient: BoxKeyPair, from sender: PublicKey) throws(CryptoError) -> [UInt8] {
        guard signature.count == Signature.byteCount else { throw .badSignature }
        return try QuickPicEnvelope.open(encryptedContent + signature, with: recipient, from: sender)
    }
}

/// The JSON of the spec's API: `{"encrypted_content": b64, "content_type": "text"|"image", "signature": b64}`.
extension QuickPicMessage: Codable {
    enum CodingKeys: String, CodingKey {
        case encryptedContent = "encrypted_content"
        case contentType = "content_type"
        case signature
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func bytes(_ key: CodingKeys) throws -> [UInt8] {
            let text = try c.decode(String.self, forKey: key)
            guard let data = Data(base64Encoded: text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "\(key.stringValue) is not base64")
            }
            return [UInt8](data)
        }
        self.init(encryptedContent: try bytes(.encryptedContent), contentType: try c.decode(ContentType.self, forKey: .contentType),
                  signature: try bytes(.signature))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Data(encryptedContent).base64EncodedString(), forKey: .encryptedContent)
        try c.encode(contentType, forKey: .contentType)
        try c.encode(Data(signature).base64EncodedString(), forKey: .signature)
    }
}
