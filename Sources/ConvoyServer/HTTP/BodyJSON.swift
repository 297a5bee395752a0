import ConvoyJSON
import Foundation
import NIOCore

/// A request body as `JSONSerialization` gives it — `[String: Any]`, `[Any]`, `String`, `NSNumber` (booleans
/// too, as `__NSCFBoolean`) and `NSNull` — read by `JSONScanner`, which is as strict as PostgreSQL's and
/// GoTrue's readers where Foundation's is not: `[1,]` and `{"a":1,}` are refused (Foundation on Linux takes
/// them). Numbers keep their exact type: an integer is an Int64 when it fits (UInt64 above 2^63 − 1), any
/// other number a finite Double; an object's repeated key keeps its last value. Invalid UTF-8, a lone
/// surrogate escape and nesting deeper than `JSONScanner.maxDepth` are refused, as empty bodies are.
enum BodyJSON {
    static func parse(_ bytes: ByteBufferView) -> Any? {
        let scanned = bytes.withContiguousStorageIfAvailable { JSONScanner.parse($0) } ?? Array(bytes).withUnsafeBufferPointer { JSONScanner.parse($0) }
        return scanned.flatMap { foundation($0) }
    }

    static func foundation(_ value: JSONValue) -> Any? {
        switch value {
        case .string(let s): return s
        case .bool(let b): return NSNumber(value: b)
        case .null: return NSNull()
        case .number(let text): return number(text)
        case .array(let elements):
            var out: [Any] = []
            out.reserveCapacity(elements.count)
            for e in elements {
                guard let v = foundation(e) else { return nil }
                out.append(v)
            }
            return out
        case .object(let members):
            var out: [String: Any] = Dictionary(minimumCapacity: members.count)
            for m in members {
                guard let v = foundation(m.value) else { return nil }
                out[m.key] = v
            }
            return out
        }
    }

    static func number(_ text: String) -> NSNumber? {
        if !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            if let i = Int64(text) { return NSNumber(value: i) }
            if let u = UInt64(text) { return NSNumber(value: u) }
        }
        guard let d = Double(text), d.isFinite else { return nil }
        return NSNumber(value: d)
    }
}
