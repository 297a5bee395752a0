import ConvoyJSON
import Foundation
import GRDB
import NIOCore
import Testing
@testable import ConvoyServer

/// JSON body values as a bigint column stores them (`Values.fromJSON`), read by `BodyJSON` as the REST
/// handler reads a body: exactly, never through a Double, and only what PostgreSQL's `int8in` takes.
@Suite struct ValuesTests {
    static let seq = Schema.Column(name: "seq", type: .bigint)

    static func parsed(_ json: String) throws -> JSONValue {
        try #require(BodyJSON.parse(ByteBuffer(string: "[\(json)]").readableBytesView)?.items.first)
    }

    @Test(arguments: [("9007199254740993", Int64(9_007_199_254_740_993)), ("-9007199254740993", -9_007_199_254_740_993),
                      ("9223372036854775807", .max), ("-9223372036854775808", .min), ("12", 12), ("-0", 0),
                      ("\"9007199254740993\"", 9_007_199_254_740_993), ("\" 7 \"", 7), ("\"\\t+7\\n\"", 7), ("\"-7\"", -7)])
    func bigintsAreStoredExactly(json: String, expected: Int64) throws {
        let value = try Self.parsed(json)
        #expect(try Values.fromJSON(value, as: Self.seq) == expected.databaseValue)
        if value.string == nil {
            #expect(Values.fromPostgresJSON(value) == expected.databaseValue, "a change's record from PostgreSQL, as a filter operand")
        }
    }

    /// What `json_populate_recordset` refuses for a bigint column on PostgreSQL 15 ("invalid input syntax for type
    /// bigint", 22P02): a number with a fraction or an exponent, even a whole one, out of range, a boolean, text
    /// that is not an integer.
    @Test(arguments: ["1.0", "2.0", "1e3", "9223372036854775808", "18446744073709551615", "1.5", "1e300", "true",
                      "\"x\"", "\"1.0\"", "\"\"", "\" \"", "\"0x1\"", "\"1 2\""])
    func numbersABigintCannotHoldAreRefused(json: String) throws {
        let value = try Self.parsed(json)
        let error = #expect(throws: APIError.self) { try Values.fromJSON(value, as: Self.seq) }
        #expect(error?.code == "22P02")
    }

    /// A whole number PostgreSQL wrote with a fraction (a numeric column's `5.0`) is an integer operand; a decimal
    /// one (a latitude) is a double operand, whose filter text is the number as written, not its whole part.
    @Test func numbersFromPostgreSQLAreOperands() throws {
        #expect(Values.fromPostgresJSON(try Self.parsed("5.0")) == Int64(5).databaseValue)
        #expect(Values.fromPostgresJSON(try Self.parsed("46.051")) == 46.051.databaseValue)
        #expect(Values.fromPostgresJSON(try Self.parsed("true")) == "true".databaseValue)
        #expect(Values.filterText(Values.fromPostgresJSON(try Self.parsed("46.051"))) == "46.051")
    }

    /// The text a filter compares with: a double as written (GRDB's integer reading cut 46.051 to "46", so PostgreSQL
    /// was asked for the whole part), a whole double as an integer, so that `eq.46` matches a stored 46.0.
    @Test func aDoublesFilterTextIsTheNumberItself() {
        #expect(Values.filterText(46.051.databaseValue) == "46.051")
        #expect(Values.filterText((-0.5).databaseValue) == "-0.5")
        #expect(Values.filterText(46.0.databaseValue) == "46" && Values.filterText(Int64(46).databaseValue) == "46")
        #expect(Values.filterText(1e-7.databaseValue).flatMap(Double.init) == 1e-7)
        #expect(Values.filterText("46.051".databaseValue) == "46.051" && Values.filterText(nil) == nil)
    }

    /// A filter operand (`id=eq.…`) is text for `int8in` too.
    @Test(arguments: [(" 7", Int64(7)), ("7 ", 7), ("+7", 7), ("-9223372036854775808", .min)])
    func bigintOperandsAreReadAsPostgreSQLReadsThem(text: String, expected: Int64) throws {
        #expect(try Values.parse(text, as: Self.seq) == expected.databaseValue)
    }

    @Test(arguments: ["1.0", "1e3", "", "7x", "9223372036854775808"])
    func badBigintOperandsAreRefused(text: String) {
        #expect(throws: APIError.self) { try Values.parse(text, as: Self.seq) }
    }
}
