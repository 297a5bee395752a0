import ConvoyJSON
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

    /// A JSON body value for column `c`; JSON null is SQL NULL.
    static func fromJSON(_ value: JSONValue, as c: Schema.Column) throws(APIError) -> DatabaseValue {
        if case .null = value {
            guard c.nullable else {
                throw .postgrest(.badRequest, "23502", "null value in column \"\(c.name)\" violates not-null constraint")
            }
            return .null
        }
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
                stored = try parse(s, as: c)
            } else {
                throw invalid(c, value.flatText ?? "null")
            }
        case .text, .uuid, .timestamptz, .other:
            guard case .string(let s) = value else { throw invalid(c, value.flatText ?? "null") }
            stored = try parse(s, as: c)
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
        let bytes = Array(text.utf8)
        var (lo, hi) = (0, bytes.count)
        while lo < hi, isSpace(bytes[lo]) { lo += 1 }
        while hi > lo, isSpace(bytes[hi - 1]) { hi -= 1 }
        return lo == 0 && hi == bytes.count ? nil : Int64(String(decoding: bytes[lo..<hi], as: UTF8.self))
    }

    /// C's `isspace` in the C locale, which `int8in` skips.
    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0D).contains(b) }

    /// A stored value as the text a filter compares with (`recipient_id=eq.…`, `id=eq.7`).
    static func filterText(_ value: DatabaseValue?) -> String? {
        guard let value else { return nil }
        return String.fromDatabaseValue(value) ?? Int64.fromDatabaseValue(value).map(String.init)
    }

    /// A JSON value from PostgreSQL as a filter operand: text and whole numbers
    /// (what `eq`/`in` filters compare), booleans as their text; nil for anything else.
    static func fromPostgresJSON(_ value: JSONValue) -> DatabaseValue? {
        switch value {
        case .string(let s): s.databaseValue
        case .number: wholeNumber(value)?.databaseValue
        case .bool(let b): (b ? "true" : "false").databaseValue
        default: nil
        }
    }

    /// A stored value as response JSON.
    static func toJSON(_ value: DatabaseValue) -> JSONValue {
        switch value.storage {
        case .null: .null
        case .int64(let i): JSONValue(i)
        case .double(let d): JSONValue(d)
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
