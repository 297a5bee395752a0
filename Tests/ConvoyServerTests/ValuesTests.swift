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
    /// Text for a boolean as PostgreSQL's `boolin` reads it (checked against PostgreSQL 15): white space around the word,
    /// any case, a unique prefix; "o" alone is neither on nor off.
    @Test func booleansAreReadAsBoolinReadsThem() {
        for (text, value) in [("t", true), (" TRUE ", true), ("ye", true), ("on", true), ("1", true), ("fal\n", false), ("N", false),
                              ("of", false), ("off", false), ("0", false)] {
            #expect(Values.bool(text) == value, "\(text)")
        }
        for text in ["o", "", "truee", "onn", "2", "yes please", "\u{A0}t"] { #expect(Values.bool(text) == nil, "\(text)") }
    }

    static let lat = Schema.Column(name: "lat", type: .double)
    static let name = Schema.Column(name: "name", type: .text)

    /// A double read as `float8in` reads it, NaN aside (SQLite keeps none); an infinite one written back as `to_json`
    /// writes it, a string, and compared by PostgreSQL's own word.
    @Test func doublesAreReadAsFloat8inReadsThemAndWrittenAsToJSONWritesThem() throws {
        #expect(try Values.parse(" 46.05 ", as: Self.lat) == 46.05.databaseValue)
        #expect(try Values.parse("-Infinity", as: Self.lat) == (-Double.infinity).databaseValue)
        #expect(throws: APIError.self) { try Values.parse("NaN", as: Self.lat) }
        #expect(throws: APIError.self) { try Values.parse("4 6", as: Self.lat) }
        #expect(Values.toJSON(Double.infinity.databaseValue) == .string("Infinity") && Values.toJSON(2.5.databaseValue) == JSONValue(2.5))
        #expect(Values.filterText((-Double.infinity).databaseValue) == "-Infinity")
        #expect(try Values.fromJSON(try Self.parsed(#"" 1.5""#), as: Self.lat) == 1.5.databaseValue)
        #expect(try Values.fromJSON(try Self.parsed("5"), as: Self.name) == "5".databaseValue)
        #expect(try Values.fromJSON(try Self.parsed("true"), as: Self.name) == "true".databaseValue)
    }

    /// A NUL in text: 22P05 from a JSON string (also deep in an RPC's argument), 22021 in a filter's operand.
    @Test func aNULIsNoText() throws {
        #expect(throws: APIError.self) { try Values.fromJSON(try Self.parsed(#""a\u0000b""#), as: Self.name) }
        #expect(try Values.fromJSON(try Self.parsed(#""a\u0001b""#), as: Self.name) == "a\u{1}b".databaseValue)
        let deep = try Self.parsed(#"{"ids":["x","a\u0000"]}"#), clean = try Self.parsed(#"{"ids":["x"]}"#)
        #expect(Values.holdsNUL(deep) && !Values.holdsNUL(clean))
        do {
            _ = try Values.parse("a\u{0}b", as: Self.name)
            Issue.record("a NUL in a filter was taken")
        } catch {
            #expect(error.code == "22021")
        }
    }
}

/// The heads of an app's `CREATE FUNCTION`s as PostgREST reads a function's parameters.
@Suite struct RPCSignatureTests {
    @Test func theHeadsSayWhatACallMustAndMayGive() {
        let script = """
            CREATE OR REPLACE FUNCTION public.accept_invite(code text, preference text DEFAULT 'precise') RETURNS json
            LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
            CREATE FUNCTION public.near(IN lat double precision, lon double precision, radius_m double precision = 5000,
                                        OUT n int) LANGUAGE sql AS $$ SELECT 1 $$;
            CREATE FUNCTION auth.hidden(a int) RETURNS int LANGUAGE sql AS $$ SELECT a $$;
            CREATE FUNCTION public.unnamed(int) RETURNS int LANGUAGE sql AS $$ SELECT $1 $$;
            """
        let read = RPCSignature.read(script: script)
        #expect(read["accept_invite"] == RPCSignature(params: ["code", "preference"], required: ["code"]))
        #expect(read["near"] == RPCSignature(params: ["lat", "lon", "radius_m"], required: ["lat", "lon"]))
        #expect(read["hidden"] == nil && read["auth_hidden"] == nil && read["unnamed"] == RPCSignature(params: [], required: []))
        let near = read["near"]!
        #expect(near.accepts(["lat", "lon"]) && near.accepts(["lat", "lon", "radius_m"]))
        #expect(!near.accepts(["lat"]) && !near.accepts(["lat", "lon", "n"]))
        #expect(RPCSignature.noFunction("near", ["lat"]).code == "PGRST202")
    }
}

/// One reader of a `CREATE FUNCTION` head for the policy helpers, the migrations RPCs and a call's match.
@Suite struct SQLFunctionHeadTests {
    static func head(_ sql: String) -> SQLFunctionHead? { SQLFunctionHead(SQLTokens(sql).tokens) }

    @Test func modesNamesTypesAndDefaultsAreReadAsPostgreSQLReadsThem() throws {
        let h = try #require(Self.head("""
            CREATE OR REPLACE FUNCTION public.f(IN Lat double precision, "Quoted" uuid[], ids OUT int, INOUT n int = 3,
                                                VARIADIC rest text[], text DEFAULT 'x') RETURNS int LANGUAGE sql AS $$ SELECT 1 $$
            """))
        #expect(h.qualified == "public.f")
        #expect(h.parameters == [
            .init(name: "lat", type: "doubleprecision", mode: .input, hasDefault: false),
            .init(name: "Quoted", type: "uuid[]", mode: .input, hasDefault: false),
            .init(name: "ids", type: "int", mode: .output, hasDefault: false),
            .init(name: "n", type: "int", mode: .inputOutput, hasDefault: true),
            .init(name: "rest", type: "text[]", mode: .variadic, hasDefault: false),
            // One word before its default is a type without a name, not a name without a type.
            .init(name: nil, type: "text", mode: .input, hasDefault: true),
        ])
        #expect(h.inputs.compactMap(\.name) == ["lat", "Quoted", "n", "rest"])
    }

    @Test func onlyAFunctionsHeadIsOne() {
        #expect(Self.head("CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$")?.parameters == [])
        #expect(Self.head("CREATE POLICY p ON t USING (true)") == nil)
        #expect(Self.head("CREATE FUNCTION f RETURNS int") == nil)
        #expect(Self.head("CREATE FUNCTION f(a int") == nil, "an unclosed head")
    }

    @Test func aPolicyHelperAndAnRPCReadTheSameHead() throws {
        let sql = "CREATE FUNCTION public.mine(IN who uuid, OUT ok boolean) LANGUAGE sql AS $$ SELECT who = auth.uid() $$"
        let f = try #require(SQLPolicies.sqlFunction(SQLTokens(sql).tokens))
        // Before, the helper took `IN` for the name of its first parameter and counted the OUT one as an argument.
        #expect(f.name == "mine" && f.params == ["who"])
        #expect(SQLFunction.types(f.head) == ["who": "uuid"])
        #expect(RPCSignature.read(script: sql)["mine"] == RPCSignature(params: ["who"], required: ["who"]))
    }
}
