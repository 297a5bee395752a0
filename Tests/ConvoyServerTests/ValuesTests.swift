import Foundation
import GRDB
import Testing
@testable import ConvoyServer

/// JSON body values as a bigint column stores them (`Values.fromJSON`), read by `JSONSerialization` as the
/// REST handler reads a body: exactly, never through a Double.
@Suite struct ValuesTests {
    static let seq = Schema.Column(name: "seq", type: .bigint)

    static func parsed(_ json: String) throws -> Any {
        try #require((try JSONSerialization.jsonObject(with: Data("[\(json)]".utf8)) as? [Any])?.first)
    }

    @Test(arguments: [("9007199254740993", Int64(9_007_199_254_740_993)), ("-9007199254740993", -9_007_199_254_740_993),
                      ("9223372036854775807", .max), ("-9223372036854775808", .min), ("12", 12), ("1e3", 1000), ("2.0", 2),
                      ("\"9007199254740993\"", 9_007_199_254_740_993)])
    func bigintsAreStoredExactly(json: String, expected: Int64) throws {
        let value = try Self.parsed(json)
        #expect(try Values.fromJSON(value, as: Self.seq) == expected.databaseValue)
        if !(value is String) {
            #expect(Values.fromPostgresJSON(value) == expected.databaseValue, "a change's record from PostgreSQL, as a filter operand")
        }
    }

    @Test(arguments: ["9223372036854775808", "18446744073709551615", "1.5", "1e300", "true", "\"x\""])
    func numbersABigintCannotHoldAreRefused(json: String) throws {
        let value = try Self.parsed(json)
        #expect(throws: APIError.self) { try Values.fromJSON(value, as: Self.seq) }
    }
}
