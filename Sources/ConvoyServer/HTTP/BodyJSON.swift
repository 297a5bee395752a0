import ConvoyJSON
import NIOCore

/// A request body read by `JSONScanner`, which is as strict as PostgreSQL's and GoTrue's readers where
/// Foundation's is not: `[1,]` and `{"a":1,}` are refused (Foundation on Linux takes them). Numbers keep
/// their literal text (a bigint is read exactly, never through a Double) and must be finite: `1e400` is
/// refused, as Foundation's reader refused it. An object's repeated key keeps its last value, once, where
/// it first stood. Invalid UTF-8, a lone surrogate escape and nesting deeper than `JSONScanner.maxDepth`
/// are refused, as empty bodies are.
enum BodyJSON {
    static func parse(_ bytes: ByteBufferView) -> JSONValue? {
        let scanned = bytes.withContiguousStorageIfAvailable { JSONScanner.parse($0) } ?? JSONScanner.parse(Array(bytes))
        return scanned.flatMap(checked)
    }

    /// The value with every number finite and every object's names unique; nil when a number is not finite.
    static func checked(_ value: JSONValue) -> JSONValue? {
        switch value {
        case .string, .bool, .null: return value
        case .number(let text):
            guard isInteger(text) || Double(text)?.isFinite == true else { return nil }
            return value
        case .array(let items):
            var out: [JSONValue] = []
            out.reserveCapacity(items.count)
            for item in items {
                guard let v = checked(item) else { return nil }
                out.append(v)
            }
            return .array(out)
        case .object(let members):
            var out: [JSONValue.Member] = []
            out.reserveCapacity(members.count)
            var at: [String: Int] = [:]
            for m in members {
                guard let v = checked(m.value) else { return nil }
                if let i = at[m.key] { out[i].value = v } else {
                    at[m.key] = out.count
                    out.append(JSONValue.Member(m.key, v))
                }
            }
            return .object(out)
        }
    }

    /// An integer literal: digits after an optional minus, no fraction or exponent (any size: PostgreSQL judges its range).
    static func isInteger(_ text: String) -> Bool {
        !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }
}
