import Foundation

/// Replaces every secret the run knows (access and refresh tokens, keys,
/// forged tokens, the JWT secret) with a label, and any other JWT-shaped text
/// with `<jwt>`, so a report never carries one.
struct ProbeRedactor: Sendable {
    private var secrets: [(value: String, label: String)] = []

    mutating func add(_ value: String?, _ label: String) {
        guard let value, value.count >= 8 else { return }
        secrets.append((value, label))
        // Longest first, so a token is never partly replaced by a shorter secret inside it.
        secrets.sort { $0.value.count > $1.value.count }
    }

    func redact(_ text: String) -> String {
        var s = text
        for (value, label) in secrets where s.contains(value) { s = s.replacingOccurrences(of: value, with: "<\(label)>") }
        return s.replacingOccurrences(of: #"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*"#, with: "<jwt>", options: .regularExpression)
    }

    /// The first `limit` bytes as text, redacted.
    func excerpt(_ bytes: [UInt8], limit: Int = 500) -> String {
        // Redact a generous prefix before cutting it, so no token is cut in half first.
        let text = redact(String(decoding: bytes.prefix(8192), as: UTF8.self))
        guard text.utf8.count > limit else { return text }
        return String(decoding: Array(text.utf8.prefix(limit)), as: UTF8.self) + "… (\(bytes.count) bytes)"
    }

    func headers(_ headers: [(name: String, value: String)]) -> [String: String] {
        var out: [String: String] = [:]
        for (name, value) in headers {
            let lower = name.lowercased()
            var v = redact(value)
            if lower == "authorization" || lower == "apikey", !v.contains("<") { v = "<redacted>" }
            out[name] = v.count > 200 ? String(v.prefix(200)) + "…" : v
        }
        return out
    }
}
