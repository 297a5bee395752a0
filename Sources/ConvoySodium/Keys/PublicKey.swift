/// A 32-byte public key (X25519 for boxes, Ed25519 for signatures), shown and
/// stored as standard Base64 as Green Box's `users.public_key` column holds it.
public struct PublicKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == 32 else {
            throw .badKey("a public key has 32 bytes, this one has \(bytes.count)")
        }
        self.bytes = bytes
    }

    public init(base64: String) throws(CryptoError) {
        try self.init(bytes: Base64.decode(base64))
    }

    public var base64: String { Base64.encode(bytes) }
    public var description: String { base64 }
}
