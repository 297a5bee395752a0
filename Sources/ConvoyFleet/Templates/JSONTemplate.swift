import ConvoyJSON

/// A JSON body written in YAML with `{{placeholders}}` (docs/templates.md): plain scalars keep their YAML type
/// (`3`, `true`, `null`), quoted ones and text are strings whose placeholders are filled, and a string that is one
/// placeholder alone (`"{{lat}}"`) takes its value's own JSON type, so a number stays a number.
public indirect enum JSONTemplate: Sendable, Equatable {
    case string(String), number(String), bool(Bool), null
    case array([JSONTemplate])
    case object([Member])

    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: JSONTemplate

        public init(_ key: String, _ value: JSONTemplate) { (self.key, self.value) = (key, value) }
    }

    /// Every placeholder in it, in order.
    public var placeholders: [String] {
        switch self {
        case .string(let s): Template.placeholders(in: s)
        case .number, .bool, .null: []
        case .array(let a): a.flatMap(\.placeholders)
        case .object(let o): o.flatMap(\.value.placeholders)
        }
    }

    /// The JSON text, each placeholder filled by `value` (a string's placeholders with the value's text).
    /// A member whose whole value is a placeholder `omit` names, and that has no value, is left out (an optional
    /// field: a plaintext's `heading` when the phone is not moving).
    public func render(_ value: (String) -> JSONValue?, omit: (String) -> Bool = { _ in false }) throws(Template.Unavailable) -> [UInt8] {
        var out: [UInt8] = []
        try write(into: &out, value, omit: omit)
        return out
    }

    public func write(into out: inout [UInt8], _ value: (String) -> JSONValue?, omit: (String) -> Bool = { _ in false }) throws(Template.Unavailable) {
        switch self {
        case .null: out += "null".utf8
        case .bool(let b): out += (b ? "true" : "false").utf8
        case .number(let n): out += n.utf8
        case .string(let s):
            if let name = Template.whole(s), let v = value(name) {
                if case .string(let text) = v { JSONValue.write(string: text, into: &out, escapingSlash: false) } else { v.write(into: &out) }
            } else {
                let text = try Template.fill(s) { (name: String) -> String? in value(name).map { $0.flatText ?? $0.text } }
                JSONValue.write(string: text, into: &out, escapingSlash: false)
            }
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                try item.write(into: &out, value, omit: omit)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            var first = true
            for m in members {
                if case .string(let s) = m.value, let name = Template.whole(s), omit(name), value(name) == nil { continue }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                JSONValue.write(string: m.key, into: &out, escapingSlash: false)
                out.append(UInt8(ascii: ":"))
                try m.value.write(into: &out, value, omit: omit)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The values a response's first row (or the response, an object) gives `save`'s names: `saved.<name>` for a
    /// later step. `column` may be a path (`result.code`: a field of a field).
    public static func saved(_ save: [(name: String, column: String)], from body: [UInt8]) -> [String: String] {
        guard let json = JSONScanner.parse(body, maxDepth: JSONScanner.foundationDepth) else { return [:] }
        let first: JSONValue? = if case .array(let rows) = json { rows.first } else { json }
        guard let row = first else { return [:] }
        var out: [String: String] = [:]
        for (name, column) in save {
            if let v = field(column, of: row) { out["saved.\(name)"] = v.flatText ?? "null" }
        }
        return out
    }

    /// `column` of `row`, a dotted path reading a field of a field (`result.code`); nil when it is not there.
    public static func field(_ column: String, of row: JSONValue) -> JSONValue? {
        var value: JSONValue? = row
        for part in column.split(separator: ".") { value = value?[String(part)] }
        return value
    }
}
