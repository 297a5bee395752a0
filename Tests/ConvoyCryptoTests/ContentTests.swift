@testable import ConvoyCrypto
@testable import ConvoySodium
import Foundation
import Testing

/// gzip and PNG as QuickPic's photos need them: made with zlib, read back strictly.
@Suite struct ContentTests {
    @Test func gzipRoundTripsAndItsHeaderIsGzips() throws {
        let text = Array(String(repeating: "QuickPic ", count: 2000).utf8)
        let gz = try Gzip.compress(text)
        #expect(Array(gz.prefix(3)) == [0x1F, 0x8B, 8] && gz.count < text.count / 10, "a gzip member (deflate), and repetitive text shrinks")
        #expect(try Gzip.decompress(gz, limit: text.count) == text)
        #expect(try Gzip.decompress(try Gzip.compress([]), limit: 10) == [])
    }

    @Test func aStreamThatIsNotGzipOrTooBigOrCutIsRefused() throws {
        #expect(throws: ContentError.self) { try Gzip.decompress(Array("hello, not gzip at all".utf8), limit: 100) }
        let big = try Gzip.compress([UInt8](repeating: 0, count: 1_000_000))
        #expect(big.count < 2_000, "a bomb: small in, large out")
        #expect(throws: ContentError("inflates past 100000 bytes")) { try Gzip.decompress(big, limit: 100_000) }
        let gz = try Gzip.compress(Array("some text to compress, long enough to be cut".utf8))
        #expect(throws: ContentError.self) { try Gzip.decompress(Array(gz.dropLast(12)), limit: 1000) }
        var flipped = gz
        flipped[gz.count - 6] ^= 0xFF  // the CRC-32 trailer
        #expect(throws: ContentError.self) { try Gzip.decompress(flipped, limit: 1000) }
        #expect(throws: ContentError.self) { try Gzip.decompress(gz + [0], limit: 1000) }
    }

    @Test func aPNGCarriesItsSizeAndTextAndEveryChunkIsChecked() throws {
        let pixels = (0..<(7 * 5 * 3)).map { UInt8($0 % 251) }
        let file = try PNGImage(width: 7, height: 5, text: ["Convoy": "seq=3 sent_ns=9"]).encode(pixels: pixels)
        #expect(Array(file.prefix(8)) == PNGImage.signature)
        let read = try PNGImage.read(file)
        #expect(read == PNGImage(width: 7, height: 5, text: ["Convoy": "seq=3 sent_ns=9"]))
        var bad = file
        bad[bad.count - 20] ^= 1  // inside IDAT (or its CRC)
        #expect(throws: ContentError.self) { try PNGImage.read(bad) }
        #expect(throws: ContentError.self) { try PNGImage.read(Array(file.dropLast(12))) }
        #expect(throws: ContentError.self) { try PNGImage.read(Array(file.dropFirst())) }
        #expect(throws: ContentError.self) { try PNGImage(width: 2, height: 2).encode(pixels: [1, 2, 3]) }
    }

    @Test func theDerivedSigningKeyIsHMACOfTheBoxKeyAndStable() throws {
        let box = try BoxKeyPair()
        let a = try SigningKeyPair(derivedFrom: box, context: "QuickPic Ed25519 signing key v1")
        let b = try SigningKeyPair(derivedFrom: BoxKeyPair(secretKey: box.secretKey.withUnsafeBytes { Array($0) }), context: "QuickPic Ed25519 signing key v1")
        #expect(a.publicKey == b.publicKey, "the same box key, the same signing key")
        let seed = try HMACSHA256.authenticate(Array("QuickPic Ed25519 signing key v1".utf8), key: box.secretKey.withUnsafeBytes { Array($0) })
        #expect(try SigningKeyPair(seed: seed).publicKey == a.publicKey, "seed = HMAC-SHA-256(box secret, context)")
        #expect(try SigningKeyPair(derivedFrom: box, context: "other").publicKey != a.publicKey)
        #expect(try SigningKeyPair(derivedFrom: BoxKeyPair(), context: "QuickPic Ed25519 signing key v1").publicKey != a.publicKey)
    }
}
