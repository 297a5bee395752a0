internal import CSodium

/// Secret key material: heap memory that is zeroed with `sodium_memzero` when the
/// last reference goes away, and never printed.
///
/// Immutable after creation, so it is safe to share between tasks: the bytes are written only inside `init` and
/// zeroed only in `deinit`, when no other reference is left. `@unchecked` because its storage is a raw pointer,
/// which the compiler cannot check; `SecretBytesSharingTests` reads one from many tasks under `make test-tsan`.
public final class SecretBytes: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    private let storage: UnsafeMutableRawBufferPointer
    /// Bytes of secret in `storage` (its capacity may be larger).
    public let count: Int

    /// Takes a copy of `bytes`; the caller should zero its own copy if it can.
    init(copying bytes: some Collection<UInt8>) {
        storage = .allocate(byteCount: max(bytes.count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        _ = storage.initializeMemory(as: UInt8.self, from: bytes)
        count = bytes.count
    }

    /// Allocates `capacity` zeroed bytes and lets `fill` write them; `fill`
    /// returns how many bytes of secret it wrote.
    init<E: Error>(capacity: Int, fill: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) {
        storage = .allocate(byteCount: max(capacity, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        do {
            count = try fill(storage)
        } catch {
            Sodium.zero(storage)
            storage.deallocate()
            throw error
        }
    }

    /// Secret from standard Base64, decoded by libsodium straight into zeroed
    /// memory: no intermediate copy of the secret is left behind.
    convenience init(base64 text: String) throws(CryptoError) {
        try Sodium.ensureReady()
        let chars = Array(text.utf8)
        try self.init(capacity: chars.count / 4 * 3 + 3) { (buffer) throws(CryptoError) -> Int in
            var length = 0
            let rc = chars.withUnsafeBufferPointer { b64 in
                b64.withMemoryRebound(to: CChar.self) { b64 in
                    sodium_base642bin(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count,
                                      b64.baseAddress, b64.count, nil, &length, nil,
                                      sodium_base64_VARIANT_ORIGINAL)
                }
            }
            guard rc == 0 else { throw .badBase64 }
            return length
        }
    }

    deinit {
        Sodium.zero(storage)
        storage.deallocate()
    }

    func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Standard Base64 of the secret. Only for a roster file the user asked for;
    /// libsodium encodes it, and its working buffer is zeroed.
    public func exportBase64() -> String {
        var out = [CChar](repeating: 0, count: count / 3 * 4 + 5)
        defer { out.withUnsafeMutableBytes { Sodium.zero($0) } }
        _ = withUnsafeBytes { bin in
            sodium_bin2base64(&out, out.count, bin.baseAddress?.assumingMemoryBound(to: UInt8.self), bin.count,
                              sodium_base64_VARIANT_ORIGINAL)
        }
        let length = out.firstIndex(of: 0) ?? out.count
        // Straight from the buffer the defer zeroes: no other copy of the text.
        return out.withUnsafeBytes { String(decoding: $0.prefix(length), as: UTF8.self) }
    }

    public var description: String { "SecretBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }
}
