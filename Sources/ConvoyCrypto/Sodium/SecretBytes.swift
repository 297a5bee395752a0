/// Secret key material: heap memory that is zeroed with `sodium_memzero` when the
/// last reference goes away, and never printed.
///
/// Immutable after creation, so it is safe to share between tasks.
public final class SecretBytes: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    private let storage: UnsafeMutableRawBufferPointer

    /// Takes a copy of `bytes`; the caller should zero its own copy if it can.
    init(copying bytes: some Collection<UInt8>) {
        storage = .allocate(byteCount: max(bytes.count, 1), alignment: 16)
        _ = storage.initializeMemory(as: UInt8.self, from: bytes)
    }

    /// Allocates `count` bytes and lets `fill` write them (e.g. a keypair function).
    init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        storage = .allocate(byteCount: count, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        do {
            try fill(storage)
        } catch {
            Sodium.zero(storage)
            storage.deallocate()
            throw error
        }
    }

    deinit {
        Sodium.zero(storage)
        storage.deallocate()
    }

    public var count: Int { storage.count }

    func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(storage))
    }

    /// Standard Base64 of the secret. Only for a roster file the user asked for.
    public func exportBase64() -> String {
        withUnsafeBytes { Base64.encode($0) }
    }

    public var description: String { "SecretBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }
}
