import ConvoyCrypto
import ConvoySodium
import Foundation
import Testing
import ConvoyTestSupport

/// Interop with an independent implementation: PyNaCl made the vectors Convoy
/// must open, and PyNaCl opens what Convoy makes.
@Suite struct InteropTests {
    let v = Vectors.shared
    var recipient: BoxKeyPair { try! BoxKeyPair(secretKeyBase64: v.keys.recipient_secret) }

    @Test func recipientKeyDerivesThePublicKeyPyNaClPublished() throws {
        #expect(recipient.publicKey.base64 == v.keys.recipient_public)
        let signer = try SigningKeyPair(seed: [UInt8](Data(base64: v.keys.sender_sign_seed)))
        #expect(signer.publicKey.base64 == v.keys.sender_sign_public)
    }

    @Test(arguments: Vectors.shared.greenbox.open.map(\.name))
    func opensGreenBoxPayloadsMadeByPyNaCl(name: String) throws {
        let case_ = v.greenbox.open.first { $0.name == name }!
        let p = try GreenBoxEnvelope.open(case_.payload, with: recipient)
        #expect(p.lat == case_.plain.lat)
        #expect(p.lon == case_.plain.lon)
        #expect(p.ts == case_.plain.ts)
        #expect(p.acc == case_.plain.acc)
        #expect(p.seq == case_.plain.seq)
        #expect(p.sentNanos == case_.plain.sent_ns)
    }

    @Test(arguments: Vectors.shared.greenbox.reject.map(\.name))
    func rejectsBadGreenBoxPayloadsWithTheRightError(name: String) {
        let case_ = v.greenbox.reject.first { $0.name == name }!
        do {
            _ = try GreenBoxEnvelope.open(case_.payload!, with: recipient)
            Issue.record("\(name): opened, expected \(case_.error)")
        } catch {
            #expect(error.reason == case_.error, "\(name)")
            if let key = case_.key { #expect(error.key == key, "\(name)") }
        }
    }

    @Test(arguments: Vectors.shared.quickpic.open.map(\.name))
    func opensQuickPicBlobsMadeByPyNaCl(name: String) throws {
        let case_ = v.quickpic.open.first { $0.name == name }!
        let sender = try PublicKey(base64: v.keys.sender_sign_public)
        let content = try QuickPicEnvelope.open([UInt8](Data(base64: case_.blob)), with: recipient, from: sender)
        #expect(content == [UInt8](Data(base64: case_.content)))
    }

    @Test(arguments: Vectors.shared.quickpic.reject.map(\.name))
    func rejectsBadQuickPicBlobsWithTheRightError(name: String) throws {
        let case_ = v.quickpic.reject.first { $0.name == name }!
        let sender = try PublicKey(base64: v.keys.sender_sign_public)
        do {
            _ = try QuickPicEnvelope.open([UInt8](Data(base64: case_.blob!)), with: recipient, from: sender)
            Issue.record("\(name): opened, expected \(case_.error)")
        } catch {
            #expect(error.reason == case_.error, "\(name)")
        }
    }

    @Test(arguments: Vectors.shared.quickpic_message.open.map(\.name))
    func opensQuickPicMessagesMadeByPyNaCl(name: String) throws {
        let case_ = v.quickpic_message.open.first { $0.name == name }!
        let sender = try PublicKey(base64: v.keys.sender_sign_public)
        let json = #"{"encrypted_content":"\#(case_.encrypted_content)","content_type":"\#(case_.content_type)","signature":"\#(case_.signature)"}"#
        let message = try JSONDecoder().decode(QuickPicMessage.self, from: Data(json.utf8))
        #expect(message.contentType.rawValue == case_.content_type)
        #expect(try message.open(with: recipient, from: sender) == [UInt8](Data(base64: case_.content)))
    }

    @Test(arguments: Vectors.shared.quickpic_message.reject.map(\.name))
    func rejectsBadQuickPicMessagesWithTheRightError(name: String) throws {
        let case_ = v.quickpic_message.reject.first { $0.name == name }!
        let sender = try PublicKey(base64: v.keys.sender_sign_public)
        let message = QuickPicMessage(encryptedContent: [UInt8](Data(base64: case_.encrypted_content!)), contentType: .text,
                                      signature: [UInt8](Data(base64: case_.signature!)))
        do {
            _ = try message.open(with: recipient, from: sender)
            Issue.record("\(name): opened, expected \(case_.error)")
        } catch {
            #expect(error.reason == case_.error, "\(name)")
        }
    }

    /// Convoy seals to the vectors' public key; the vectors' secret key opens it.
    @Test func convoyCiphertextsOpenWithTheVectorsKeys() throws {
        let to = try PublicKey(base64: v.keys.recipient_public)
        let payload = LocationPayload(lat: 45.7, lon: 14.3, ts: 1_767_600_000, acc: 4.5, seq: 7, sentNanos: 1_767_600_000_000_000_001)
        #expect(try GreenBoxEnvelope.open(try GreenBoxEnvelope.seal(payload, to: to), with: recipient) == payload)

        let signer = try SigningKeyPair(seed: [UInt8](Data(base64: v.keys.sender_sign_seed)))
        let blob = try QuickPicEnvelope.seal(Array("hi".utf8), to: to, signedBy: signer)
        #expect(try QuickPicEnvelope.open(blob, with: recipient, from: signer.publicKey) == Array("hi".utf8))
    }

    static let python = repositoryRoot.appendingPathComponent("scripts/.venv/bin/python3").path
    static let pyNaClRequired = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_PYTHON_TOOLS"] == "1"
    static let pyNaClAvailable = FileManager.default.isExecutableFile(atPath: python)

    /// PyNaCl opens what Convoy sealed. `make test` installs PyNaCl (scripts/setup)
    /// and sets CONVOY_REQUIRE_PYTHON_TOOLS=1, so there this test fails rather than skips.
    @Test(.enabled(if: pyNaClAvailable || pyNaClRequired, "PyNaCl not installed: run scripts/setup"))
    func pyNaClOpensWhatConvoySealed() throws {
        #expect(Self.pyNaClAvailable, "scripts/.venv/bin/python3 is missing: run scripts/setup")
        let to = try PublicKey(base64: v.keys.recipient_public)
        let signer = try SigningKeyPair(seed: [UInt8](Data(base64: v.keys.sender_sign_seed)))
        let payloads: [LocationPayload] = (0..<5).map { (i: Int) -> LocationPayload in
            let x = Double(i)
            let sent: Int64 = 1_700_000_000_000_000_000 + Int64(i)
            return LocationPayload(lat: 10 + x / 8, lon: -20 - x / 4, ts: 1_700_000_000 + x, acc: x,
                                   seq: UInt64(i), sentNanos: sent)
        }
        let contents: [[UInt8]] = [[], Array("hello PyNaCl".utf8), (0..<3000).map { UInt8($0 % 251) }]
        let request: [String: Any] = [
            "recipient_secret": v.keys.recipient_secret,
            "sender_sign_public": signer.publicKey.base64,
            "greenbox": try payloads.map { try GreenBoxEnvelope.seal($0, to: to) },
            "quickpic": try contents.map { Data(try QuickPicEnvelope.seal($0, to: to, signedBy: signer)).base64EncodedString() },
            "quickpic_message": try contents.map { content -> [String: String] in
                let m = try QuickPicMessage.seal(content, contentType: QuickPicMessage.ContentType.image, to: to, signedBy: signer)
                return ["encrypted_content": Data(m.encryptedContent).base64EncodedString(), "signature": Data(m.signature).base64EncodedString()]
            },
        ]
        let output = try runPython(script: "scripts/open_with_pynacl.py", input: JSONSerialization.data(withJSONObject: request))
        let reply = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any])
        let opened = try #require(reply["greenbox"] as? [[String: Any]])
        #expect(opened.count == payloads.count)
        for (p, o) in zip(payloads, opened) {
            #expect((o["lat"] as? NSNumber)?.doubleValue == p.lat)
            #expect((o["lon"] as? NSNumber)?.doubleValue == p.lon)
            #expect((o["seq"] as? NSNumber)?.uint64Value == p.seq)
            #expect((o["sent_ns"] as? NSNumber)?.int64Value == p.sentNanos)
        }
        let quick = try #require(reply["quickpic"] as? [String])
        #expect(quick.map { [UInt8](Data(base64: $0)) } == contents)
        let messages = try #require(reply["quickpic_message"] as? [String])
        #expect(messages.map { [UInt8](Data(base64: $0)) } == contents)
    }

    private func runPython(script: String, input: Data) throws -> Data {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [repositoryRoot.appendingPathComponent(script).path]
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(input)
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "PyNaCl: \(String(decoding: err, as: UTF8.self))")
        return out
    }
}
