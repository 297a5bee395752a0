import ConvoySodium
import Foundation
import Testing

/// Closer's release keys are Tink's `ECIES_P256_HKDF_HMAC_SHA256_AES128_GCM`: what Tink makes, Convoy opens, and
/// what Convoy makes opens only with the right key and context.
@Suite struct ECIESP256Tests {
    /// Made by Tink 1.x's Python hybrid encryption (RAW output prefix) for the private scalar 0x01…0x20, the
    /// plaintext 0x64…0x83 and the context `couple1|q1|alice|bob` (the script: Tests/ConvoyCryptoTests/Vectors/tink-ecies.py).
    static let tinkCiphertext = """
    04d338b977ab6d34fd8d0aca4b920d88ed7dfb608bba6d69e2d40903b8308a8952ddb8a3cec2a43eb35fc6531ad95caf3cb883a650827ade\
    43361435718bc342ebb89dffbc603c152b4d1e52f8a203653f12d95f27845276b0406d5b43e165a4007434f8ef4612fce9c94b40d629b107efbf\
    e3a8f6a12ea9487f6dee89
    """
    static let scalar = (1...32).map { UInt8($0) }
    static let plain = (100..<132).map { UInt8($0) }
    static let context = Array("couple1|q1|alice|bob".utf8)

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    @Test func opensWhatTinkMade() throws {
        let keys = try ECIESP256.KeyPair(scalar: Self.scalar)
        let cipher = Self.bytes(hex: Self.tinkCiphertext)
        #expect(cipher.count == Self.plain.count + ECIESP256.overhead)
        #expect(try ECIESP256.open(cipher, with: keys, context: Self.context) == Self.plain)
        // Another context (another couple, question or pair) or one changed byte does not open.
        #expect(throws: CryptoError.tampered) { try ECIESP256.open(cipher, with: keys, context: Array("couple1|q1|bob|alice".utf8)) }
        var bent = cipher
        bent[bent.count - 20] ^= 1
        #expect(throws: CryptoError.tampered) { try ECIESP256.open(bent, with: keys, context: Self.context) }
    }

    @Test func sealsForTheHolderOfTheKeyAlone() throws {
        let bob = ECIESP256.KeyPair(), eve = ECIESP256.KeyPair()
        #expect(ECIESP256.isPoint(bob.publicPoint))
        let sealed = try ECIESP256.seal(Self.plain, to: bob.publicPoint, context: Self.context)
        #expect(sealed.count == Self.plain.count + ECIESP256.overhead)
        #expect(try ECIESP256.open(sealed, with: bob, context: Self.context) == Self.plain)
        #expect(throws: CryptoError.tampered) { try ECIESP256.open(sealed, with: eve, context: Self.context) }
        #expect(throws: CryptoError.truncated) { try ECIESP256.open(Array(sealed.prefix(60)), with: bob, context: Self.context) }
        // A point off the curve is refused, not used.
        var off = bob.publicPoint
        off[64] ^= 1
        #expect(!ECIESP256.isPoint(off))
        #expect(throws: CryptoError.badKey) { try ECIESP256.seal(Self.plain, to: off, context: Self.context) }
    }
}
