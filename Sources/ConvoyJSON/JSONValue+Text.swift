/// `JSONValue` written back as JSON, and built from Swift values: the typed side of the wire, so a
/// frame or a payload is read once into a `JSONValue` and written from one, never through Foundation's
/// untyped `[String: Any]`.
extension JSONValue {
    /// The value as compact JSON: objects' members in the order they hold (as read, or as built), numbers
    /// as their literal text, strings with the escapes RFC 8259 needs (and `\/`, as Foundation writes it).
    public var text: String {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// A scalar as the text a flat `[String: String]` view holds: a string itself, a number its literal, a
    /// boolean `true`/`false`; nil for null; an array or object its JSON text.
    public var flatText: String? {
        switch self {
        case .string(let s): s
        case .number(let n): n
        case .bool(let b): b ? "true" : "false"
        case .null: nil
        case .array, .object: text
        }
    }

    public func write(into out: inout [UInt8]) {
        switch self {
        case .string(let s): Self.write(string: s, into: &out)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, m) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.write(string: m.key, into: &out)
                out.append(UInt8(ascii: ":"))
                m.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: quotes, backslashes, `/` (unless told not to: a probe's request body is sent as a client
    /// writes it, and `\/` would grow a Base64 blob by a sixty-fourth) and control characters escaped.
    public static func write(string s: String, into out: inout [UInt8], escapingSlash: Bool = true) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case UInt8(ascii: "/") where escapingSlash: out.append(contentsOf: [0x5C, 0x2F])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xF)]])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    // MARK: Building

    /// An object of `members` in the order given.
    public static func ordered(_ members: KeyValuePairs<String, JSONValue>) -> JSONValue {
        .object(members.map { Member(key: $0.key, value: $0.value) })
    }

    /// An object of a dictionary's members, keys sorted (a stable text for the same dictionary).
    public init(_ dictionary: [String: JSONValue]) {
        self = .object(dictionary.sorted { $0.key < $1.key }.map { Member(key: $0.key, value: $0.value) })
    }

    public init(_ s: String) { self = .string(s) }
    public init(_ n: Int) { self = .number(String(n)) }
    public init(_ n: Int64) { self = .number(String(n)) }
    public init(_ b: Bool) { self = .bool(b) }
    /// A finite double as its shortest round-tripping literal (`1.5`, `1e-05`); null when not finite (JSON has no NaN).
    public init(_ d: Double) {
        guard d.isFinite else {
            self = .null
            return
        }
        self = d == d.rounded() && abs(d) < 1e15 ? .number(String(Int64(d))) : .number("\(d)")
    }

    /// The members of an object (empty for anything else).
    public var members: [Member] {
        if case .object(let m) = self { return m }
        return []
    }

    /// The items of an array (empty for anything else).
    public var items: [JSONValue] {
        if case .array(let a) = self { return a }
        return []
    }

    /// The object with `key` set to `value` (replaced where it was, else appended); anything else unchanged.
    public func setting(_ key: String, to value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return self }
        if let i = members.lastIndex(where: { $0.key == key }) { members[i].value = value } else { members.append(Member(key: key, value: value)) }
        return .object(members)
    }

    /// A number as a Double (nil for anything else, or a literal Double cannot hold).
    public var double: Double? {
        if case .number(let n) = self { return Double(n) }
        return nil
    }

    /// A number written as an integer that fits an Int (nil for anything else: a fraction, text, a larger integer).
    public var int: Int? {
        if case .number(let n) = self { return Int(n) }
        return nil
    }

    /// A number written as an integer literal that fits an Int64, exactly (no fraction, no exponent: `1.0` and
    /// `1e3` are nil, as PostgreSQL's `int8in` refuses them; nothing goes through a Double).
    public var int64: Int64? {
        if case .number(let n) = self { return Int64(n) }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var isNull: Bool { self == .null }

    /// An object's members by name (a repeated name keeps its last value, as `subscript(key:)` reads it); nil for anything else.
    public var dictionary: [String: JSONValue]? {
        guard case .object(let members) = self else { return nil }
        var out: [String: JSONValue] = Dictionary(minimumCapacity: members.count)
        for m in members { out[m.key] = m.value }
        return out
    }

    /// An array's strings, in order (nil for anything but an array of strings).
    public var strings: [String]? {
        guard case .array(let items) = self else { return nil }
        var out: [String] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .string(let s) = item else { return nil }
            out.append(s)
        }
        return out
    }
}

extension JSONValue {
    /// An optional as JSON: the value, or null.
    public init(_ value: JSONValue?) { self = value ?? .null }
    public init(_ s: String?) { self = s.map(JSONValue.string) ?? .null }
    public init(_ strings: [String]) { self = .array(strings.map(JSONValue.string)) }
}

extension JSONValue.Member {
    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

/// Literals, so a payload is written as it reads: `["type": "broadcast", "event": "pos", "payload": ["seq": 7]]`
/// (an object's members in the order written). No nil literal: `nil` must stay an Optional's, never JSON's null.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(String(value)) }
    public init(floatLiteral value: Double) { self.init(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements.map { Member(key: $0.0, value: $0.1) }) }
}
