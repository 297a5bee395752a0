import ConvoySodium

/// The Green Box envelope (greenbox-prd.md §4.4): the JSON location payload,
/// sealed with `crypto_box_seal` to one friend's public key, as standard Base64
/// text for the `encrypted_locations.payload` column.
public enum GreenBoxEnvelope {
    /// Seals `payload` for `friend`. One call per friend per update.
    public static func seal(_ payload: LocationPayload, to friend: PublicKey) throws(CryptoError) -> String {
        var plain = try payload.jsonBytes()
        defer { plain.withUnsafeMutableBytes { Sodium.zero($0) } }
        return Base64.encode(try SealedBox.seal(plain, to: friend))
    }

    /// Opens a payload column with the recipient's key pair and validates it.
    ///
    /// Throws `.badBase64`, `.truncated`, `.cannotOpen` (sealed to another key,
    /// or bytes changed), `.badJSON` or `.outOfRange`.
    public static func open(_ text: String, with keyPair: BoxKeyPair) throws(CryptoError) -> LocationPayload {
        let sealed = try Base64.decode(text)
        var plain = try SealedBox.open(sealed, with: keyPair)
        defer { plain.withUnsafeMutableBytes { Sodium.zero($0) } }
        return try LocationPayload(jsonBytes: plain)
    }
}
