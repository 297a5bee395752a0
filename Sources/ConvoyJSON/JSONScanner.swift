/// A JSON value read straight from UTF-8 bytes by `JSONScanner`: numbers keep
/// their literal text, objects their members in order. The Realtime client's
/// hot frames (a change, a heartbeat's reply) are read with it instead of
/// `JSONSerialization`, which builds Foundation objects and bridges each value.
public enum JSONValue: Sendable, Equatable {
    case string(String)
    /// The number's literal text, as written (RFC 8259's grammar).
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([Member])

    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: JSONValue
    }

    /// An object's member (the last one of that name, as a dictionary would keep); nil otherwise.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.key == key })?.value
    }

    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}

/// A strict JSON reader (RFC 8259) over UTF-8 bytes: nil for anything that is
/// not exactly one JSON value (surrounding whitespace aside), for invalid
/// UTF-8, for a lone surrogate escape, and for nesting deeper than `maxDepth`.
public enum JSONScanner {
    /// The deepest nesting read unless told: a request body (PostgreSQL's and GoTrue's readers refuse far less deep).
    public static let maxDepth = 64
    /// Foundation's own limit (`JSONSerialization` refuses deeper): what a Realtime frame may nest, as Supabase's
    /// clients and Convoy's reader took them before frames were typed. The reader recurses once a level, a few
    /// hundred bytes of stack each.
    public static let foundationDepth = 512

    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = JSONScanner.maxDepth) -> JSONValue? {
        var reader = Reader(bytes: bytes, maxDepth: maxDepth)
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipSpace()
        return reader.at == bytes.count ? value : nil
    }

    public static func parse(_ bytes: [UInt8], maxDepth: Int = JSONScanner.maxDepth) -> JSONValue? {
        bytes.withUnsafeBufferPointer { parse($0, maxDepth: maxDepth) }
    }

    public static func parse(_ text: String, maxDepth: Int = JSONScanner.maxDepth) -> JSONValue? {
        var text = text
        return text.withUTF8 { parse($0, maxDepth: maxDepth) }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        let maxDepth: Int
        var at = 0

        init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) { (self.bytes, self.maxDepth) = (bytes, maxDepth) }

        mutating func skipSpace() {
            while at < bytes.count {
                switch bytes[at] {
                case 0x20, 0x09, 0x0A, 0x0D: at += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) -> JSONValue? {
            guard depth <= maxDepth else { return nil }
            skipSpace()
            guard at < bytes.count else { return nil }
            switch bytes[at] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
            let n = word.utf8CodeUnitCount
            guard at + n <= bytes.count else { return nil }
            for i in 0..<n where bytes[at + i] != word.utf8Start[i] { return nil }
            at += n
            return value
        }

        mutating func object(depth: Int) -> JSONValue? {
            at += 1
            var members: [JSONValue.Member] = []
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
                at += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { return nil }
                at += 1
                guard let v = value(depth: depth + 1) else { return nil }
                members.append(.init(key: key, value: v))
                skipSpace()
                guard at < bytes.count else { return nil }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                if bytes[at] == UInt8(ascii: "}") { at += 1; return .object(members) }
                return nil
            }
        }

        mutating func array(depth: Int) -> JSONValue? {
            at += 1
            var items: [JSONValue] = []
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
                at += 1
                return .array(items)
            }
            while true {
                guard let v = value(depth: depth + 1) else { return nil }
                items.append(v)
                skipSpace()
                guard at < bytes.count else { return nil }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                if bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                return nil
            }
        }

        /// A string at `at` (its opening quote); the common case, no escapes, is one validated copy.
        mutating func string() -> String? {
            at += 1
            let start = at
            while at < bytes.count {
                let b = bytes[at]
                if b == UInt8(ascii: "\"") {
                    let s = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
                    at += 1
                    return s
                }
                if b == UInt8(ascii: "\\") { return escaped(from: start) }
                if b < 0x20 { return nil }
                at += 1
            }
            return nil
        }

        /// The rest of a string with escapes, its plain part so far from `start`.
        mutating func escaped(from start: Int) -> String? {
            var out: [UInt8] = []
            out.reserveCapacity(at - start + 64)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<at]))
            while at < bytes.count {
                // The run up to the next quote, backslash or control character, in one copy.
                let run = at
                while at < bytes.count, bytes[at] != UInt8(ascii: "\""), bytes[at] != UInt8(ascii: "\\"), bytes[at] >= 0x20 { at += 1 }
                if at > run { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<at])) }
                guard at < bytes.count else { return nil }
                let b = bytes[at]
                if b == UInt8(ascii: "\"") {
                    at += 1
                    return String(validating: out, as: UTF8.self)
                }
                if b < 0x20 { return nil }
                guard at + 1 < bytes.count else { return nil }
                let e = bytes[at + 1]
                at += 2
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800...0xDBFF).contains(scalar) {
                        // A high surrogate must be followed by an escaped low one.
                        guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else { return nil }
                        at += 2
                        guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        return nil
                    }
                    guard let u = Unicode.Scalar(scalar) else { return nil }
                    out.append(contentsOf: UTF8.encode(u)!)
                default:
                    return nil
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard at + 4 <= bytes.count else { return nil }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let b = bytes[at]
                let d: UInt8
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
                default: return nil
                }
                v = v << 4 | UInt32(d)
                at += 1
            }
            return v
        }

        /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func number() -> JSONValue? {
            let start = at
            if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard at < bytes.count, isDigit(bytes[at]) else { return nil }
            if bytes[at] == UInt8(ascii: "0") { at += 1 } else { digits() }
            if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
                at += 1
                guard at < bytes.count, isDigit(bytes[at]) else { return nil }
                digits()
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
                at += 1
                if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
                guard at < bytes.count, isDigit(bytes[at]) else { return nil }
                digits()
            }
            return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self))
        }

        mutating func digits() { while at < bytes.count, isDigit(bytes[at]) { at += 1 } }

        func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
    }
}
