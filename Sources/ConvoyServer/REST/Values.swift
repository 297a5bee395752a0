import ConvoyJSON
import Foundation
import GRDB
import HTTPTypes

/// Conversions between request text/JSON, SQLite values and response JSON,
/// by column type, with PostgreSQL's error codes for bad input.
enum Values {
    /// PostgreSQL's refusal of `text` as a value of `c`'s type: 22P02, but 22007 for a time (`timestamptz_in`'s code).
    static func invalid(_ c: Schema.Column, _ text: String) -> APIError {
        .postgrest(.badRequest, c.type == .timestamptz ? "22007" : "22P02", "invalid input syntax for type \(c.type.postgresName): \"\(text.prefix(100))\"")
    }

    /// Text holding a NUL, which no PostgreSQL text can: a JSON string's `\u0000` cannot be made text (22P05), and a
    /// parameter's raw 0x00 is no UTF-8 PostgreSQL takes (22021). SQLite would keep the text cut at the NUL.
    static let nulInJSON = APIError.postgrest(.badRequest, "22P05", "unsupported Unicode escape sequence",
                                              details: "\\u0000 cannot be converted to text.")
    static let nulInText = APIError.postgrest(.badRequest, "22021", "invalid byte sequence for encoding \"UTF8\": 0x00")

    /// Whether a JSON value holds a string with a NUL, in it or in its arrays and objects (an RPC's arguments).
    static func holdsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let s): s.utf8.contains(0)
        case .array(let items): items.contains(where: holdsNUL)
        case .object(let members): members.contains { $0.key.utf8.contains(0) || holdsNUL($0.value) }
        case .number, .bool, .null: false
        }
    }

    /// A filter operand (always text in the URL).
    /// `now`: what the word `now` is (the store's clock; PostgreSQL's own for its filters).
    static func parse(_ text: String, as c: Schema.Column, now: Date = Date()) throws(APIError) -> DatabaseValue {
        if text.utf8.contains(0) { throw nulInText }
        switch c.type {
        case .text: return text.databaseValue
        case .uuid:
            guard let u = uuid(text) else { throw invalid(c, text) }
            return u.databaseValue
        case .bigint:
            guard let n = bigint(text) else { throw invalid(c, text) }
            return n.databaseValue
        case .timestamptz:
            guard let d = Timestamps.parse(text, now: now) else { throw invalid(c, text) }
            return Timestamps.format(d).databaseValue
        case .double:
            // As `float8in` reads it: white space, `Infinity`. NaN is the one value SQLite cannot keep (a bound NaN is
            // stored as NULL), so it is refused on both stores (docs/server.md, "Known differences").
            guard let d = float8(text), !d.isNaN else { throw invalid(c, text) }
            return d.databaseValue
        case .other:
            // PostgreSQL parses it (with a cast to the column's type) and reports bad input.
            return text.databaseValue
        }
    }

    /// A JSON body value for column `c`; JSON null is SQL NULL. A NOT NULL column's is refused where PostgreSQL refuses
    /// it, after the row-level security check on the row (a row the user may not write is 42501 first).
    /// Other values are read as `json_populate_recordset` reads them: a string as the column's type reads text, any
    /// other value by its JSON text (`{"name": 5}` stores "5", `{"lat": "46.05"}` the number).
    static func fromJSON(_ value: JSONValue, as c: Schema.Column, now: Date = Date()) throws(APIError) -> DatabaseValue {
        if case .null = value { return .null }
        if case .string(let s) = value, s.utf8.contains(0) { throw nulInJSON }
        let stored: DatabaseValue
        switch c.type {
        case .bigint:
            if let i = value.int64 {
                stored = i.databaseValue
            } else if case .string(let s) = value, let i = bigint(s) {
                stored = i.databaseValue
            } else {
                throw invalid(c, value.flatText ?? "null")
            }
        case .double:
            if let d = value.double, d.isFinite {
                stored = d.databaseValue
            } else if case .string(let s) = value {
                stored = try parse(s, as: c, now: now)
            } else {
                throw invalid(c, value.flatText ?? "null")
            }
        case .text, .uuid, .timestamptz, .other:
            guard let s = value.flatText else { throw invalid(c, "null") }
            stored = try parse(s, as: c, now: now)
        }
        // Allowed values (CHECK constraints) are the database's to enforce, after
        // the RLS check as in PostgreSQL: a row the user may not write is 42501 first.
        return stored
    }

    /// A number PostgreSQL itself wrote into a change's JSON: an integer literal exactly, or a whole
    /// number in range written with a fraction (a numeric column's `5.0`). A bigint body value is read
    /// by `JSONValue.int64`, as PostgreSQL's `int8in` takes one: an integer literal only (`1.0` and `1e3`
    /// are refused, "invalid input syntax for type bigint"), and nothing goes through a Double, which
    /// rounds 9007199254740993 to ...992.
    static func wholeNumber(_ value: JSONValue) -> Int64? {
        if let i = value.int64 { return i }
        guard case .number(let text) = value, !BodyJSON.isInteger(text), let d = Double(text) else { return nil }
        return Int64(exactly: d)
    }

    /// Text as `int8in` reads it: optional white space around an optional sign and decimal digits.
    static func bigint(_ text: String) -> Int64? {
        if let n = Int64(text) { return n }
        let trimmed = cTrimmed(text)
        return trimmed.utf8.count == text.utf8.count ? nil : Int64(trimmed)
    }

    /// Text as PostgreSQL's `uuid_in` reads it, in its canonical form (lowercase, hyphenated): 32 hex digits in either
    /// case, optionally in braces, with a hyphen allowed after any group of four digits.
    static func uuid(_ text: String) -> String? {
        var bytes = Array(text.utf8)
        if bytes.first == UInt8(ascii: "{") {
            guard bytes.last == UInt8(ascii: "}"), bytes.count >= 2 else { return nil }
            bytes = Array(bytes.dropFirst().dropLast())
        }
        var hex: [UInt8] = []
        hex.reserveCapacity(32)
        var hyphenAt = -1
        for b in bytes {
            if b == UInt8(ascii: "-") {
                guard !hex.isEmpty, hex.count % 4 == 0, hex.count < 32, hyphenAt != hex.count else { return nil }
                hyphenAt = hex.count
                continue
            }
            guard hex.count < 32, let h = hexDigit(b) else { return nil }
            hex.append(h)
        }
        guard hex.count == 32, bytes.last != UInt8(ascii: "-") else { return nil }
        var out = String(decoding: hex, as: UTF8.self)
        for at in [8, 13, 18, 23] { out.insert("-", at: out.index(out.startIndex, offsetBy: at)) }
        return out
    }

    /// `b` as a lowercase hex digit's byte, if it is one.
    private static func hexDigit(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): b
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b + 32
        default: nil
        }
    }

    /// Text as `float8in` reads it: white space around a decimal number, `NaN`, `Infinity` or `inf` (any case, signed).
    static func float8(_ text: String) -> Double? {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        switch t.lowercased() {
        case "nan": return .nan
        case "infinity", "inf", "+infinity", "+inf": return .infinity
        case "-infinity", "-inf": return -.infinity
        default:
            guard let first = t.unicodeScalars.first, first == "-" || first == "+" || first == "." || ("0"..."9").contains(first),
                  let d = Double(t), d.isFinite else { return nil }
            return d
        }
    }

    /// Text as PostgreSQL's `boolin` reads it: white space around `true`, `yes`, `on`, `1` and their opposites, any
    /// case, a word also by a unique prefix (`t`, `fal`, `ye`, `of`; "o" alone is neither).
    static func bool(_ text: String) -> Bool? {
        let word = cTrimmed(text).lowercased()
        switch word.first {
        case "t"?: return "true".hasPrefix(word) ? true : nil
        case "y"?: return "yes".hasPrefix(word) ? true : nil
        case "f"?: return "false".hasPrefix(word) ? false : nil
        case "n"?: return "no".hasPrefix(word) ? false : nil
        case "o"?: return word == "on" ? true : word == "of" || word == "off" ? false : nil
        case "1"?: return word == "1" ? true : nil
        case "0"?: return word == "0" ? false : nil
        default: return nil
        }
    }

    /// `text` without the C white space (`isspace` in the C locale) at its ends, which `int8in` and `boolin` skip.
    private static func cTrimmed(_ text: String) -> Substring {
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0D).contains(b) }
        let bytes = text.utf8
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return Substring(text.utf8[first...last])
    }

    /// A stored value as the text a filter compares with (`recipient_id=eq.…`, `id=eq.7`, `lat=gt.46.05`): a double
    /// in its shortest round-trip form, which `float8in` reads back exactly (a whole one as an integer, so `lat=eq.46`
    /// is a stored 46.0 on both stores). GRDB's `Int64.fromDatabaseValue` cut a double toward zero: PostgreSQL was
    /// asked for `lat = 46` when the filter said 46.051, and a Realtime filter on a decimal column matched any 46.x.
    static func filterText(_ value: DatabaseValue?) -> String? {
        switch value?.storage {
        case .string(let s)?: s
        case .int64(let i)?: String(i)
        case .double(let d)?: Int64(exactly: d).map(String.init) ?? (d.isFinite ? "\(d)" : d.isNaN ? "NaN" : d > 0 ? "Infinity" : "-Infinity")
        default: nil
        }
    }

    /// A JSON value from PostgreSQL as a filter operand: text, numbers (whole ones as integers), booleans as their
    /// text; nil for anything else.
    static func fromPostgresJSON(_ value: JSONValue) -> DatabaseValue? {
        switch value {
        case .string(let s): s.databaseValue
        case .number(let n): wholeNumber(value)?.databaseValue ?? Double(n).flatMap { $0.isFinite ? $0.databaseValue : nil }
        case .bool(let b): (b ? "true" : "false").databaseValue
        default: nil
        }
    }

    /// A stored value as response JSON. An infinite double is written as PostgreSQL's `to_json` writes it, a string.
    static func toJSON(_ value: DatabaseValue) -> JSONValue {
        switch value.storage {
        case .null: .null
        case .int64(let i): JSONValue(i)
        case .double(let d): d.isFinite ? JSONValue(d) : .string(d > 0 ? "Infinity" : "-Infinity")
        case .string(let s): .string(s)
        case .blob(let b): .string(b.base64EncodedString())
        }
    }

    /// A row as a response object, its columns in `columns`' order (PostgREST's: the select list's, else the table's).
    static func object(_ row: [String: DatabaseValue], _ columns: [String]) -> JSONValue {
        .object(columns.compactMap { c in row[c].map { JSONValue.Member(c, toJSON($0)) } })
    }

    /// A row as a response object, its columns sorted (where no column order is known).
    static func object(_ row: [String: DatabaseValue]) -> JSONValue {
        JSONValue(row.mapValues(toJSON))
    }
}
