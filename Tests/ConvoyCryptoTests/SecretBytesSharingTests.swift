import ConvoySodium
import Foundation
import Testing

/// `SecretBytes` is `@unchecked Sendable`: its bytes are written only while it is made and zeroed only when the
/// last reference goes. Many tasks reading one key at once, and the last reference dropped on another, is what a
/// fleet does with each phone's keys; `make test-tsan` runs this under ThreadSanitizer.
@Suite struct SecretBytesSharingTests {
    @Test func manyTasksReadOneSecretWhileItsLastHolderLetsGo() async throws {
        let signer = try SigningKeyPair()
        let box = try BoxKeyPair()
        let exported = box.secretKey.exportBase64()
        let message = Array("where I am".utf8)
        let sealed = try SealedBox.seal(message, to: box.publicKey)
        let results = try await withThrowingTaskGroup(of: (String, [UInt8], [UInt8]).self) { group in
            for _ in 0..<16 {
                group.addTask { (box.secretKey.exportBase64(), signer.sign(message), try SealedBox.open(sealed, with: box)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 16)
        #expect(results.allSatisfy { $0.0 == exported && $0.1 == signer.sign(message) && $0.2 == message })
        // The pair restored from the export is the same key (the control: a different key's export differs).
        #expect(try BoxKeyPair(secretKeyBase64: exported).publicKey == box.publicKey)
        #expect(try BoxKeyPair().secretKey.exportBase64() != exported)
        // The last reference goes on a child task's thread (its deinit zeroes the bytes there), after it read them.
        let lastHolder = try BoxKeyPair()
        let publicKey = lastHolder.publicKey
        let read = await Task.detached { [lastHolder] in lastHolder.secretKey.exportBase64() }.value
        #expect(try BoxKeyPair(secretKeyBase64: read).publicKey == publicKey)
    }
}
