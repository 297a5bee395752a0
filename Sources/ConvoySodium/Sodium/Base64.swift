import Foundation

/// Standard Base64 (RFC 4648 §4, with padding), as Green Box payloads use.
/// For public data only: secrets go through `SecretBytes(base64:)` and
/// `SecretBytes.exportBase64()`, which leave no copies behind.
package enum Base64 {
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
    }

    /// Strict: whitespace, URL-safe characters and missing padding are rejected.
    package static func decode(_ text: String) throws(CryptoError) -> [UInt8] {
        guard let data = Data(base64Encoded: text) else { throw .badBase64 }
        return [UInt8](data)
    }
}
