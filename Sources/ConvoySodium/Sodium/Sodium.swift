internal import CSodium

/// The one place that initialises libsodium. Every public entry point that
/// calls into the library goes through `Sodium.ensureReady()` first.
package enum Sodium {
    /// `sodium_init` is thread-safe and idempotent; a `static let` runs it once.
    private static let initResult: Int32 = sodium_init()

    package static func ensureReady() throws(CryptoError) {
        guard initResult >= 0 else { throw .libraryUnavailable }
    }

    /// The libsodium version string (e.g. "1.0.18"), for `convoy --version`.
    static var version: String { String(cString: sodium_version_string()) }

    /// Fills `count` bytes from libsodium's CSPRNG.
    package static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return out
    }

    /// Overwrites memory in a way the compiler may not optimise away.
    package static func zero(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        sodium_memzero(base, buffer.count)
    }
}

/// The libsodium Convoy links against, for diagnostics.
public enum CryptoLibrary {
    public static var sodiumVersion: String { Sodium.version }
}
