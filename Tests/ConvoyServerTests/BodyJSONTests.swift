import ConvoyJSON
import Foundation
import NIOCore
import Testing
@testable import ConvoyServer

/// Request bodies read by `BodyJSON` hold what `JSONSerialization` held, value for value (numbers exactly, as
/// their literal text), except where Foundation is laxer than PostgREST and GoTrue.
@Suite struct BodyJSONTests {
    static func body(_ text: String) -> JSONValue? { BodyJSON.parse(ByteBuffer(string: text).readableBytesView) }

    /// What Foundation read, in the same terms: kind, value, and for a number whether it is an integer a bigint
    /// column takes (`Values.fromJSON`) or another finite number.
    static func shape(foundation value: Any) -> String {
        switch value {
        case let d as [String: Any]: return "{" + d.keys.sorted().map { "\($0):\(shape(foundation: d[$0]!))" }.joined(separator: ",") + "}"
        case let a as [Any]: return "[" + a.map { shape(foundation: $0) }.joined(separator: ",") + "]"
        case let s as String: return "s(\(s))"
        case is NSNull: return "null"
        case let n as NSNumber:
            switch String(cString: n.objCType) {
            case "c": return "b(\(n.boolValue))"
            case "q", "l", "i", "s": return "i(\(n.int64Value))"
            case "Q", "L", "I", "S", "C": return "u(\(n.uint64Value))"
            default: return "d(\(n.doubleValue))"
            }
        default: return "?\(type(of: value))"
        }
    }

    static func shape(_ value: JSONValue) -> String {
        switch value {
        case .object: let d = value.dictionary!; return "{" + d.keys.sorted().map { "\($0):\(shape(d[$0]!))" }.joined(separator: ",") + "}"
        case .array(let a): return "[" + a.map(shape).joined(separator: ",") + "]"
        case .string(let s): return "s(\(s))"
        case .null: return "null"
        case .bool(let b): return "b(\(b))"
        case .number(let text):
            if let i = value.int64 { return "i(\(i))" }
            if BodyJSON.isInteger(text), let u = UInt64(text) { return "u(\(u))" }
            return "d(\(Double(text)!))"
        }
    }

    @Test(arguments: [
        #"{"recipient_id":"6f1c5e2a-1b2c-4d5e-8f90-0123456789ab","payload":"AbC\/dEf+gh==","seq":12,"ok":true,"no":false,"gone":null}"#,
        #"[{"a":1},{"a":-3,"b":1.5},{"a":2.0,"b":1e3,"c":-0.25}]"#,
        #"{"big":9007199254740993,"max":9223372036854775807,"above":9223372036854775808,"neg":-9007199254740993}"#,
        #"{"s":"caf\u00e9 \ud83d\ude00 \"q\" \\ \n","k":"x","k":"last"}"#,
        #"  [ 1 , [ ] , { } , "" ]  "#, #""fragment""#, "7", "true", "null",
    ])
    func valuesAreFoundations(text: String) throws {
        let foundation = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        let ours = try #require(Self.body(text))
        #expect(Self.shape(ours) == Self.shape(foundation: foundation))
    }

    /// A repeated name is kept once, with its last value, where it first stood: what the stores and PostgreSQL are given.
    @Test func aRepeatedNameKeepsItsLastValueOnce() throws {
        let value = try #require(Self.body(#"{"k":"x","a":1,"k":"last"}"#))
        #expect(value.text == #"{"k":"last","a":1}"#)
    }

    /// Foundation on Linux takes trailing commas, PostgreSQL's and GoTrue's readers do not; the rest both refuse.
    @Test(arguments: ["[1,]", #"{"a":1,}"#, "", "   ", "[1 2]", #"{"a":1}x"#, "[01]", "[NaN]", "[1e999]", #"{"a":[-1e999]}"#, #"["\ud800"]"#,
                      "[\"\u{7}\"]", String(repeating: "[", count: 100) + String(repeating: "]", count: 100)])
    func malformedBodiesAreRefused(text: String) {
        #expect(Self.body(text) == nil)
    }

    @Test func invalidUTF8IsRefused() {
        var buffer = ByteBuffer(string: "[\"a")
        buffer.writeBytes([0xC3, 0x28])
        buffer.writeString("\"]")
        #expect(BodyJSON.parse(buffer.readableBytesView) == nil)
    }
}
