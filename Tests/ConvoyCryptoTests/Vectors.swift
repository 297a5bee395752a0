import Foundation
import Testing

/// The PyNaCl-made vectors in Vectors/pynacl-vectors.json.
struct Vectors: Decodable, Sendable {
    struct Keys: Decodable, Sendable {
        let recipient_secret, recipient_public, other_secret, other_public: String
        let sender_sign_seed, sender_sign_public: String
    }
    struct GreenBoxOpen: Decodable, Sendable {
        let name: String
        let plain: Plain
        let payload: String
    }
    /// The fields Convoy reads; the vectors' other fields are ignored, as by Convoy.
    struct Plain: Decodable, Sendable {
        let lat, lon, ts, acc: Double
        let seq: UInt64?
        let sent_ns: Int64?
    }
    struct Reject: Decodable, Sendable {
        let name: String
        let payload: String?
        let blob: String?
        let encrypted_content: String?
        let signature: String?
        let error: String
        let key: String?
    }
    struct MessageOpen: Decodable, Sendable {
        let name: String
        let content: String
        let content_type: String
        let encrypted_content: String
        let signature: String
    }
    struct QuickPicOpen: Decodable, Sendable {
        let name: String
        let content: String
        let blob: String
    }
    struct Suite<Open: Decodable & Sendable>: Decodable, Sendable {
        let open: [Open]
        let reject: [Reject]
    }

    let generator: String
    let keys: Keys
    let greenbox: Suite<GreenBoxOpen>
    let quickpic: Suite<QuickPicOpen>
    let quickpic_message: Suite<MessageOpen>

    static let shared: Vectors = {
        let url = Bundle.module.url(forResource: "pynacl-vectors", withExtension: "json", subdirectory: "Vectors")!
        return try! JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }()
}

extension Data {
    init(base64 text: String) { self = Data(base64Encoded: text)! }
}

/// The repository root, from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
