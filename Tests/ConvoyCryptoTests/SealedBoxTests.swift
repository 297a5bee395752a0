import ConvoySodium
import Testing

/// `SealedBox` takes X25519 from BoringSSL and the rest from libsodium; on the
/// wire it must be libsodium's `crypto_box_seal`, both ways, refusals included.
@Suite struct SealedBoxTests {
    /// Curve25519 points of small order (and their non-canonical encodings), the
    /// list libsodium's `has_small_order` refuses.
    static let smallOrderKeys: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        [0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
         0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00],
        [0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef, 0x5b,
         0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57],
        [0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f],
        [0xed] + [UInt8](repeating: 0xff, count: 30) + [0x7f],
        [0xee] + [UInt8](repeating: 0xff, count: 30) + [0x7f],
    ]

    @Test(arguments: [0, 1, 57, 1000])
    func libsodiumOpensWhatSealMakes(length: Int) throws {
        let alice = try BoxKeyPair()
        let plain = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let sealed = try SealedBox.seal(plain, to: alice.publicKey)
        #expect(sealed.count == length + SealedBox.overhead)
        #expect(SealedBox.openedByLibsodium(sealed, with: alice) == plain)
        #expect(SealedBox.openedByLibsodium(sealed, with: try BoxKeyPair()) == nil)
    }

    @Test(arguments: [0, 1, 57, 1000])
    func openOpensWhatLibsodiumSeals(length: Int) throws {
        let alice = try BoxKeyPair()
        let plain = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        let sealed = try #require(SealedBox.sealedByLibsodium(plain, to: alice.publicKey))
        #expect(try SealedBox.open(sealed, with: alice) == plain)
        #expect(throws: CryptoError.cannotOpen) { try SealedBox.open(sealed, with: try BoxKeyPair()) }
    }

    @Test func aRestoredKeyPairOpensWhatWasSealedToTheOriginal() throws {
        let alice = try BoxKeyPair()
        let restored = try BoxKeyPair(secretKeyBase64: alice.secretKey.exportBase64())
        #expect(restored.publicKey == alice.publicKey)
        #expect(try SealedBox.open(try SealedBox.seal([1, 2, 3], to: alice.publicKey), with: restored) == [1, 2, 3])
    }

    @Test(arguments: SealedBoxTests.smallOrderKeys.indices)
    func aSmallOrderRecipientKeyIsRefusedAsLibsodiumRefusesIt(index: Int) throws {
        let key = try PublicKey(bytes: Self.smallOrderKeys[index])
        #expect(SealedBox.sealedByLibsodium([1, 2, 3], to: key) == nil)
        #expect(throws: CryptoError.badKey) { try SealedBox.seal([1, 2, 3], to: key) }
    }

    @Test(arguments: SealedBoxTests.smallOrderKeys.indices)
    func aSmallOrderEphemeralKeyDoesNotOpen(index: Int) throws {
        let alice = try BoxKeyPair()
        // A genuine box, its ephemeral key swapped for a small-order point: the
        // shared point is zero, which both implementations refuse before the MAC.
        var sealed = try SealedBox.seal([UInt8](repeating: 9, count: 40), to: alice.publicKey)
        sealed.replaceSubrange(0..<32, with: Self.smallOrderKeys[index])
        #expect(SealedBox.openedByLibsodium(sealed, with: alice) == nil)
        #expect(throws: CryptoError.cannotOpen) { try SealedBox.open(sealed, with: alice) }
    }
}
