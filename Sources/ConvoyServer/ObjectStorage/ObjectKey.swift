import Foundation

/// Bucket names and object keys as storage-api accepts them
/// (src/storage/limits.ts: `VALID_BUCKET_NAME`, `VALID_OBJECT_KEY`), plus what
/// a filesystem store refuses besides: dot segments (`.`, `..`), a leading
/// `/`, empty segments and keys over 1,024 bytes (S3's limit). No key ever
/// becomes a file path (bytes are stored under a random version id), so these
/// refusals are defence in depth, answered 400 `InvalidKey` as storage-api does.
enum ObjectKey {
    /// S3's limit on a key, bytes.
    static let maxKeyBytes = 1024
    static let maxBucketNameLength = 100

    /// storage-api's safe characters: `[A-Za-z0-9_/!.*'() &$=@;:+,?-]`.
    private static let keyCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_/!.*'() &$=@;:+,?-".unicodeScalars)

    static func isValidKey(_ key: String) -> Bool {
        guard !key.isEmpty, key.utf8.count <= maxKeyBytes, key.unicodeScalars.allSatisfy(keyCharacters.contains) else { return false }
        var segments = key.split(separator: "/", omittingEmptySubsequences: false)
        if segments.count > 1, segments.last == "" { segments.removeLast() }  // `folder/` names a folder
        return !segments.contains { $0.isEmpty || $0 == "." || $0 == ".." }
    }

    static func isValidBucketName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= maxBucketNameLength && !name.contains("/")
            && name.unicodeScalars.allSatisfy(keyCharacters.contains)
    }

    /// Throws storage-api's `InvalidKey` unless `key` is valid.
    static func require(_ key: String) throws(StorageAPIError) -> String {
        guard isValidKey(key) else { throw .invalidKey(key) }
        return key
    }

    /// `storage.foldername(name)`: every segment but the last.
    static func folders(_ name: String) -> [String] {
        Array(name.split(separator: "/", omittingEmptySubsequences: false).dropLast().map(String.init))
    }

    /// `storage.filename(name)`: the last segment.
    static func filename(_ name: String) -> String {
        name.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? name
    }

    /// `storage.extension(name)`: what follows the file name's last dot (the whole name when it has none).
    static func fileExtension(_ name: String) -> String {
        filename(name).split(separator: ".", omittingEmptySubsequences: false).last.map(String.init) ?? ""
    }

    /// A path taken from the request URI: percent-decoded (`%2F` is a `/`, as
    /// fastify decodes its wildcard); nil when it does not decode.
    static func decode(_ raw: Substring) -> String? {
        String(raw).removingPercentEncoding
    }
}

/// Sizes as storage-api writes them: bytes as an integer, or a number with a
/// unit, `50MB`, `1.5GB`, `300KB`, `10B` (decimal units, case-insensitive;
/// src/storage/limits.ts `parseFileSizeToBytes`). The bucket's
/// `file_size_limit` and `convoy serve --storage-file-limit` share it.
public enum FileSize {
    public static func bytes(_ text: String) -> Int? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        if let n = Int(t), n >= 0 { return n }
        let units: [(String, Double)] = [("gb", 1e9), ("mb", 1e6), ("kb", 1e3), ("b", 1)]
        guard let (unit, factor) = units.first(where: { t.hasSuffix($0.0) }) else { return nil }
        let number = t.dropLast(unit.count)
        guard !number.isEmpty, number.first!.isNumber, number.last!.isNumber,
              number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), number.filter({ $0 == "." }).count <= 1,
              let value = Double(number), value.isFinite
        else { return nil }
        // storage-api keeps three significant digits (`toPrecision(3)`).
        let rounded = Double(String(format: "%.3g", value)) ?? value
        let bytes = rounded * factor
        guard bytes < 9e18 else { return nil }
        return Int(bytes)
    }
}
