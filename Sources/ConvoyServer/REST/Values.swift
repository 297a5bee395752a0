import Foundation
import GRDB
import HTTPTypes

/// Conversions between request text/JSON, SQLite values and response JSON,
/// by column type, with PostgreSQL's error codes for bad input.
enum Values {
    static func invalid(_ c: Schema.Column, _ text: String) -> APIError {
        .postgrest(.badRequest, "22P02", "invalid input syntax for type \(c.type.postgresName): \"\(text.prefix(100))\"")
    }

    /// A filter operand (always text in the URL).
    static func parse(_ text: String, as c: Schema.Column) throws(APIError) -> DatabaseValue {
        switch c.type {
        case .text: return text.databaseValue
        case .uuid:
            guard let u = UUID(uuidString: text) else { throw invalid(c, text) }
            return u.uuidString.lowercased().databaseValue
        case .bigint:
            guard let n = bigint(text) else { throw invalid(c, text) }
            return n.databaseValue
        case .timestamptz:
            guard let d = Timestamps.parse(text) else { throw invalid(c, text) }
            return Timestamps.format(d).databaseValue
        case .double:
            guard let d = Double(text), d.isFinite else { throw invalid(c, text) }
            return d.databaseValue
        case .other:
            // PostgreSQL parses it (with a cast to the column's type) and reports bad input.
            return text.databaseValue
        }
    }

    /// A JSON body value for column `c`; nil JSON is SQL NULL.
    static func fromJSON(_ value: Any, as c: Schema.Column) throws(APIError) -> DatabaseValue {
        if value is NSNull {
            guard c.nullable else {
                throw .postgrest(.badRequest, "23502", "null value in column \"\(c.name)\" violates not-null constraint")
            }
            return .null
        }
        let stored: DatabaseValue
        switch c.type {
        case .bigint:
            if let n = value as? NSNumber, let i = int64(n) {
                stored = i.databaseValue
            } else if let s = value as? String, let i = bigint(s) {
                stored = i.databaseValue
            } else {
                throw invalid(c, "\(value)")
            }
        case .double:
            if let n = value as? NSNumber, !isBoolean(n), n.doubleValue.isFinite {
                stored = n.doubleValue.databaseValue
            } else if let s = value as? String {
                stored = try parse(s, as: c)
            } else {
                throw invalid(c, "\(value)")
            }
        case .text, .uuid, .timestamptz, .other:
            guard let s = value as? String else { throw invalid(c, "\(value)") }
            stored = try parse(s, as: c)
        }
        // Allowed values (CHECK constraints) are the database's to enforce, after
        // the RLS check as in PostgreSQL: a row the user may not write is 42501 first.
        return stored
    }

    /// A JSON number as a bigint, as PostgreSQL takes one: an integer literal only, exactly as parsed
    /// (`BodyJSON`, like `JSONSerialization`, keeps integers up to 2^63 − 1 as Int64 and those above as
    /// UInt64). `1.0` and `1e3` are refused, as `int8in` refuses them ("invalid input syntax for type
    /// bigint"), and nothing goes through a Double, which rounds 9007199254740993 to ...992.
    static func int64(_ n: NSNumber) -> Int64? {
        switch String(cString: n.objCType) {
        case "q", "l", "i", "s": n.int64Value
        case "Q", "L", "I", "S", "C": Int64(exactly: n.uint64Value)
        default: nil  // true, false ("c"), and every number with a fraction or an exponent ("d")
        }
    }

    /// A number PostgreSQL itself wrote into a change's JSON: an integer as `int64`, or a whole
    /// number in range written with a fraction (a numeric column's `5.0`).
    static func wholeNumber(_ n: NSNumber) -> Int64? {
        if let i = int64(n) { return i }
        return isBoolean(n) ? nil : Int64(exactly: n.doubleValue)
    }

    /// Text as `int8in` reads it: optional white space around an optional sign and decimal digits.
    static func bigint(_ text: String) -> Int64? {
        if let n = Int64(text) { return n }
        let bytes = Array(text.utf8)
        var (lo, hi) = (0, bytes.count)
        while lo < hi, isSpace(bytes[lo]) { lo += 1 }
        while hi > lo, isSpace(bytes[hi - 1]) { hi -= 1 }
        return lo == 0 && hi == bytes.count ? nil : Int64(String(decoding: bytes[lo..<hi], as: UTF8.self))
    }

    /// C's `isspace` in the C locale, which `int8in` skips.
    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0D).contains(b) }

    /// JSON `true`/`false`: on Linux every NSNumber answers `is Bool`, so ask its type code.
    static func isBoolean(_ n: NSNumber) -> Bool {
        String(cString: n.objCType) == "c"
    }

    /// A stored value as the text a filter compares with (`recipient_id=eq.…`, `id=eq.7`).
    static func filterText(_ value: DatabaseValue?) -> String? {
        guard let value else { return nil }
        return String.fromDatabaseValue(value) ?? Int64.fromDatabaseValue(value).map(String.init)
    }

    /// A JSON value from PostgreSQL as a filter operand: text and whole numbers
    /// (what `eq`/`in` filters compare); nil for anything else.
    static func fromPostgresJSON(_ value: Any) -> DatabaseValue? {
        if let s = value as? String { return s.databaseValue }
        if let n = value as? NSNumber, let i = wholeNumber(n) { return i.databaseValue }
        if let n = value as? NSNumber, isBoolean(n) { return (n.boolValue ? "true" : "false").databaseValue }
        return nil
    }

    /// A stored value as response JSON.
    static func toJSON(_ value: DatabaseValue) -> Any {
        switch value.storage {
        case .null: NSNull()
        case .int64(let i): i
        case .double(let d): d
        case .string(let s): s
        case .blob(let b): b.base64EncodedString()
        }
    }
}
