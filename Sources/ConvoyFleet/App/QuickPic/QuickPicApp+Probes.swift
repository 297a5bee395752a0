import ConvoyCrypto
import ConvoySodium
import Foundation

/// What a hostile QuickPic client can make with the keys it has (probes/quickpic.yaml): messages sealed and
/// signed between the cast's members, one signed with a key nobody published, one over the 5 MiB limit.
/// Each is `message.<from>_to_<to>.content` and `.signature` (base64, as `POST /messages` takes them).
extension QuickPicApp {
    static let probePairs = [("attacker", "friend"), ("attacker", "victim"), ("attacker", "stranger"), ("friend", "victim"), ("friend", "attacker")]

    /// The placeholders `probeMessages` fills.
    static let probeNames: [String] = (probePairs.map { "\($0.0)_to_\($0.1)" } + ["wrong_key", "oversized"])
        .flatMap { ["message.\($0).content", "message.\($0).signature"] }

    public func probeMessages(keys: [String: BoxKeyPair]) -> [String: String] {
        var values: [String: String] = [:]
        func add(_ name: String, content: [UInt8], to recipient: BoxKeyPair, signedBy signer: SigningKeyPair) {
            guard let sealed = try? QuickPicMessage.seal(content, contentType: .text, to: recipient.publicKey, signedBy: signer) else { return }
            values["message.\(name).content"] = Data(sealed.encryptedContent).base64EncodedString()
            values["message.\(name).signature"] = Data(sealed.signature).base64EncodedString()
        }
        let text = Array("[convoy probe] a message a hostile client made".utf8)
        for (from, to) in Self.probePairs {
            guard let sender = keys[from], let recipient = keys[to], let signer = try? Self.signing(sender) else { continue }
            add("\(from)_to_\(to)", content: text, to: recipient, signedBy: signer)
        }
        // Signed with a key that is nobody's published signing key: "sent as someone else".
        if let friend = keys["friend"], let stray = try? SigningKeyPair() {
            add("wrong_key", content: text, to: friend, signedBy: stray)
        }
        // Over the spec's 5 MB limit once sealed, and signed properly: only the size may refuse it.
        if let attacker = keys["attacker"], let friend = keys["friend"], let signer = try? Self.signing(attacker) {
            add("oversized", content: Sodium.randomBytes(5 * 1024 * 1024), to: friend, signedBy: signer)
        }
        return values
    }
}
