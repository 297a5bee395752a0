@testable import ConvoyCrypto
import ConvoySodium
import Foundation
import Testing

/// QuickPic's message as its data model has it: `encrypted_content`, `content_type` and `signature` apart.
@Suite struct QuickPicMessageTests {
    let alice = try! BoxKeyPair()
    let bob = try! SigningKeyPair()

    @Test func itIsTheEnvelopeSplitAtItsSignature() throws {
        let key = [UInt8](repeating: 7, count: 32), nonce = [UInt8](repeating: 9, count: 24)
        let m = try QuickPicMessage.seal(Array("photo".utf8), contentType: .image, key: key, nonce: nonce, to: alice.publicKey, signedBy: bob)
        #expect(m.signature.count == 64 && m.encryptedContent.count == QuickPicEnvelope.overhead - 64 + 5)
        #expect(try Signature.verify(m.signature, of: m.encryptedContent, by: bob.publicKey) == (), "the signature covers encrypted_content exactly")
        #expect(try m.open(with: alice, from: bob.publicKey) == Array("photo".utf8))
        #expect(try QuickPicEnvelope.open(m.encryptedContent + m.signature, with: alice, from: bob.publicKey) == Array("photo".utf8))
    }

    @Test func theJSONIsTheSpecsFieldsInBase64() throws {
        let m = try QuickPicMessage.seal(Array("hi".utf8), contentType: .text, to: alice.publicKey, signedBy: bob)
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(m)) as? [String: String])
        #expect(Set(json.keys) == ["encrypted_content", "content_type", "signature"] && json["content_type"] == "text")
        #expect(Data(base64Encoded: json["signature"]!)?.count == 64)
        #expect(try JSONDecoder().decode(QuickPicMessage.self, from: JSONEncoder().encode(m)) == m)
        let bad = #"{"encrypted_content":"not base64!","content_type":"text","signature":"AA=="}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(QuickPicMessage.self, from: Data(bad.utf8)) }
        let video = #"{"encrypted_content":"AA==","content_type":"video","signature":"AA=="}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(QuickPicMessage.self, from: Data(video.utf8)) }
    }

    @Test func aSignatureThatIsNotTheSendersOrNot64BytesIsRefusedBeforeDecrypting() throws {
        var m = try QuickPicMessage.seal(Array("hi".utf8), contentType: .text, to: alice.publicKey, signedBy: bob)
        #expect(throws: CryptoError.badSignature) { try m.open(with: alice, from: try SigningKeyPair().publicKey) }
        m.signature.removeLast()
        #expect(throws: CryptoError.badSignature) { try m.open(with: alice, from: bob.publicKey) }
        // The spec signs the blob alone: a relabelled content_type still opens (the phone checks the content itself).
        var relabelled = try QuickPicMessage.seal(Array("hi".utf8), contentType: .text, to: alice.publicKey, signedBy: bob)
        relabelled.contentType = .image
        #expect(try relabelled.open(with: alice, from: bob.publicKey) == Array("hi".utf8))
    }
}
