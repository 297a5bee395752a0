import ConvoyCrypto
import ConvoySodium
import Foundation
import Testing

@Suite struct GreenBoxEnvelopeTests {
    @Test func roundTripsAndIsRandomised() throws {
        let alice = try BoxKeyPair()
        let p = LocationPayload(lat: 34.052, lon: -118.243, ts: 1_678_886_400, acc: 5)
        let a = try GreenBoxEnvelope.seal(p, to: alice.publicKey)
        let b = try GreenBoxEnvelope.seal(p, to: alice.publicKey)
        #expect(a != b, "sealed boxes use a fresh ephemeral key each time")
        #expect(try GreenBoxEnvelope.open(a, with: alice) == p)
        // 48 bytes of overhead on the PRD's JSON, as standard Base64.
        let json = try p.jsonBytes()
        #expect(String(decoding: json, as: UTF8.self) == #"{"lat":34.052,"lon":-118.243,"ts":1678886400,"acc":5}"#)
        #expect(Data(base64Encoded: a)!.count == json.count + SealedBox.overhead)
    }

    @Test func anotherKeyCannotOpen() throws {
        let alice = try BoxKeyPair(), eve = try BoxKeyPair()
        let sealed = try GreenBoxEnvelope.seal(LocationPayload(lat: 1, lon: 2, ts: 3, acc: 4), to: alice.publicKey)
        #expect(throws: CryptoError.cannotOpen) { try GreenBoxEnvelope.open(sealed, with: eve) }
    }

    @Test(arguments: [0, 31, 32, 47, 60])
    func everyFlippedByteIsCaught(index: Int) throws {
        let alice = try BoxKeyPair()
        var raw = [UInt8](Data(base64Encoded: try GreenBoxEnvelope.seal(LocationPayload(lat: 1, lon: 2, ts: 3, acc: 4), to: alice.publicKey))!)
        raw[index] ^= 0x80
        #expect(throws: CryptoError.cannotOpen) { try GreenBoxEnvelope.open(Data(raw).base64EncodedString(), with: alice) }
    }

    @Test func refusesToSealOutOfRangeValues() throws {
        let alice = try BoxKeyPair()
        #expect(throws: CryptoError.outOfRange) {
            try GreenBoxEnvelope.seal(LocationPayload(lat: .nan, lon: 0, ts: 0, acc: 0), to: alice.publicKey)
        }
        #expect(throws: CryptoError.outOfRange) {
            try GreenBoxEnvelope.seal(LocationPayload(lat: 0, lon: 0, ts: 0, acc: -0.1), to: alice.publicKey)
        }
    }

    @Test func strictBase64() throws {
        let alice = try BoxKeyPair()
        let sealed = try GreenBoxEnvelope.seal(LocationPayload(lat: 1, lon: 2, ts: 3, acc: 4), to: alice.publicKey)
        let urlSafe = sealed.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        if urlSafe != sealed {
            #expect(throws: CryptoError.badBase64) { try GreenBoxEnvelope.open(urlSafe, with: alice) }
        }
        #expect(throws: CryptoError.badBase64) { try GreenBoxEnvelope.open("%%%%", with: alice) }
    }
}

@Suite struct QuickPicEnvelopeTests {
    let bob = try! SigningKeyPair()
    let alice = try! BoxKeyPair()

    @Test func roundTrip() throws {
        let blob = try QuickPicEnvelope.seal(Array("photo".utf8), to: alice.publicKey, signedBy: bob)
        #expect(blob.count == QuickPicEnvelope.overhead + 5)
        #expect(try QuickPicEnvelope.open(blob, with: alice, from: bob.publicKey) == Array("photo".utf8))
    }

    /// Any changed byte after the version fails the signature, before decryption.
    @Test(arguments: [1, 40, 81, 90, 105, 110, -1])
    func tamperingAnywhereFailsTheSignature(offset: Int) throws {
        var blob = try QuickPicEnvelope.seal(Array("message".utf8), to: alice.publicKey, signedBy: bob)
        blob[offset < 0 ? blob.count + offset : offset] ^= 0x01
        #expect(throws: CryptoError.badSignature) { try QuickPicEnvelope.open(blob, with: alice, from: bob.publicKey) }
    }

    @Test func versionByteIsChecked() throws {
        var blob = try QuickPicEnvelope.seal([1, 2, 3], to: alice.publicKey, signedBy: bob)
        blob[0] = 9
        #expect(throws: CryptoError.unsupportedVersion) { try QuickPicEnvelope.open(blob, with: alice, from: bob.publicKey) }
    }

    @Test func wrongSenderKeyAndWrongRecipient() throws {
        let blob = try QuickPicEnvelope.seal([1, 2, 3], to: alice.publicKey, signedBy: bob)
        let mallory = try SigningKeyPair()
        #expect(throws: CryptoError.badSignature) { try QuickPicEnvelope.open(blob, with: alice, from: mallory.publicKey) }
        #expect(throws: CryptoError.wrongKey) { try QuickPicEnvelope.open(blob, with: try BoxKeyPair(), from: bob.publicKey) }
    }

    @Test func truncated() throws {
        let blob = try QuickPicEnvelope.seal([], to: alice.publicKey, signedBy: bob)
        #expect(throws: CryptoError.truncated) { try QuickPicEnvelope.open(blob.dropLast(), with: alice, from: bob.publicKey) }
    }
}

@Suite struct KeyTests {
    @Test func secretsNeverAppearInDescriptions() throws {
        let pair = try BoxKeyPair()
        let secret = pair.secretKey.exportBase64()
        for text in ["\(pair)", String(describing: pair), String(reflecting: pair.secretKey), "\(pair.secretKey)"] {
            #expect(!text.contains(secret))
            #expect(text.contains("redacted"))
        }
        let signing = try SigningKeyPair()
        #expect(!"\(signing)".contains(signing.secretKey.exportBase64()))
    }

    @Test func restoresFromExportedSecret() throws {
        let pair = try BoxKeyPair()
        let restored = try BoxKeyPair(secretKeyBase64: pair.secretKey.exportBase64())
        #expect(restored.publicKey == pair.publicKey)
    }

    @Test func secretBase64IsStrictAndRoundTrips() throws {
        let pair = try BoxKeyPair()
        let text = pair.secretKey.exportBase64()
        #expect(text.count == 44 && text.hasSuffix("="))
        #expect(try BoxKeyPair(secretKeyBase64: text).publicKey == pair.publicKey)
        #expect(throws: CryptoError.badBase64) { try BoxKeyPair(secretKeyBase64: " " + text) }
        #expect(throws: CryptoError.badBase64) { try BoxKeyPair(secretKeyBase64: String(text.dropLast())) }
        #expect(throws: CryptoError.badKey) { try BoxKeyPair(secretKeyBase64: "AAAA") }
        #expect(throws: CryptoError.badKey) { try BoxKeyPair(secretKey: []) }
    }

    @Test func rejectsBadKeys() {
        #expect(throws: CryptoError.badKey) { try PublicKey(bytes: [1, 2, 3]) }
        #expect(throws: CryptoError.badBase64) { try PublicKey(base64: "***") }
        #expect(throws: CryptoError.badKey) { try BoxKeyPair(secretKey: Array(repeating: 1, count: 31)) }
        #expect(throws: CryptoError.badKey) { try SigningKeyPair(seed: []) }
    }

    @Test func payloadDecodingNamesTheKey() {
        do {
            _ = try LocationPayload(jsonBytes: Array(#"{"lat":1,"lon":2,"ts":3,"acc":true}"#.utf8))
            Issue.record("a boolean acc was accepted")
        } catch {
            #expect(error == .badJSON)
            #expect(error.key == "acc")
        }
    }
}

@Suite struct PasswordHashTests {
    @Test func argon2idHashesVerifyAndAreSalted() throws {
        let a = try PasswordHash.minimum.hash("correct horse")
        let b = try PasswordHash.minimum.hash("correct horse")
        #expect(a.hasPrefix("$argon2id$v=19$"))
        #expect(a != b, "a fresh salt each time")
        #expect(PasswordHash.verify("correct horse", against: a))
        #expect(!PasswordHash.verify("correct horse!", against: a))
        #expect(!PasswordHash.verify("", against: a))
        #expect(!PasswordHash.verify("x", against: "not a hash"))
        #expect(PasswordHash.verify("", against: try PasswordHash.minimum.hash("")))
    }

    @Test func theCostIsInTheEncodedHash() throws {
        #expect(try PasswordHash.interactive.hash("pw").contains("m=65536,t=2"))
        #expect(try PasswordHash.minimum.hash("pw").contains("t=1"))
    }
}

/// A GPS-denied fix's flag: `"fix":"reduced"` when set, absent otherwise (Green Box's payloads are unchanged).
@Suite struct ReducedAccuracyFlagTests {
    @Test func theFlagRoundTripsAndIsAbsentWhenClear() throws {
        var p = LocationPayload(lat: 51.5, lon: -0.12, ts: 1_767_600_000.25, acc: 65, seq: 3, sentNanos: 1)
        #expect(!String(decoding: try p.jsonBytes(), as: UTF8.self).contains("fix"))
        p.reduced = true
        let text = String(decoding: try p.jsonBytes(), as: UTF8.self)
        #expect(text.hasSuffix(#","fix":"reduced"}"#))
        #expect(try LocationPayload(jsonBytes: Array(text.utf8)) == p)
        #expect(try LocationPayload(jsonBytes: Array(#"{"lat":1,"lon":2,"ts":3,"acc":4,"fix":"gps"}"#.utf8)).reduced == false)
    }
}
