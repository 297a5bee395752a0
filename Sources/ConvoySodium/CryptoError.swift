/// Why a cryptographic operation or an envelope could not be completed.
///
/// Compare with the static members (`error == .badSignature`); `message` says what
/// was wrong in words a user can act on, and `key` names the JSON key at fault
/// where there is one.
public struct CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: String, Hashable, Sendable {
        case libraryUnavailable = "library_unavailable"
        case badBase64 = "bad_base64"
        case truncated
        case cannotOpen = "cannot_open"
        case wrongKey = "wrong_key"
        case tampered
        case badSignature = "bad_signature"
        case unsupportedVersion = "unsupported_version"
        case badJSON = "bad_json"
        case outOfRange = "out_of_range"
        case badKey = "bad_key"
    }

    private let kind: Kind
    /// What went wrong, for a person.
    public let message: String
    /// The JSON key at fault (payload decoding), if any.
    public let key: String?

    private init(_ kind: Kind, _ message: String, key: String? = nil) {
        self.kind = kind
        self.message = message
        self.key = key
    }

    /// A short stable name, used as the reason label in metrics (`decrypt_failures{reason=...}`).
    public var reason: String { kind.rawValue }
    public var description: String { message }

    public static func == (lhs: CryptoError, rhs: CryptoError) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    // Matchers, for `catch let e as CryptoError where e == .truncated`.
    public static let libraryUnavailable = CryptoError(.libraryUnavailable, "libsodium could not be initialised")
    public static let badBase64 = CryptoError(.badBase64, "the payload is not standard Base64")
    public static let truncated = CryptoError(.truncated, "the ciphertext is shorter than its envelope's fixed overhead")
    public static let cannotOpen = CryptoError(.cannotOpen, "the sealed box does not open with this key pair")
    public static let wrongKey = CryptoError(.wrongKey, "the envelope was sealed to another key")
    public static let tampered = CryptoError(.tampered, "the ciphertext failed authentication")
    public static let badSignature = CryptoError(.badSignature, "the sender's signature does not verify")
    public static let unsupportedVersion = CryptoError(.unsupportedVersion, "unknown envelope version")
    public static let badJSON = CryptoError(.badJSON, "the plaintext is not the expected JSON")
    public static let outOfRange = CryptoError(.outOfRange, "a value is out of range")
    public static let badKey = CryptoError(.badKey, "a key has the wrong length or encoding")

    package static func cannotOpen(_ detail: String) -> CryptoError { CryptoError(.cannotOpen, detail) }
    package static func truncated(_ detail: String) -> CryptoError { CryptoError(.truncated, detail) }
    package static func badKey(_ detail: String) -> CryptoError { CryptoError(.badKey, detail) }
    package static func unsupportedVersion(_ detail: String) -> CryptoError { CryptoError(.unsupportedVersion, detail) }
    package static func badJSON(_ detail: String, key: String? = nil) -> CryptoError { CryptoError(.badJSON, detail, key: key) }
    package static func outOfRange(_ detail: String, key: String) -> CryptoError { CryptoError(.outOfRange, detail, key: key) }
}
