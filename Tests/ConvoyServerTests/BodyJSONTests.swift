import Foundation
import NIOCore
import Testing
@testable import ConvoyServer

/// Request bodies read by `BodyJSON` give what `JSONSerialization` gives, value for value and type for type,
/// except where Foundation is laxer than PostgREST and GoTrue.
@Suite struct BodyJSONTests {
    static func body(_ text: String) -> Any? { BodyJSON.parse(ByteBuffer(string: text).readableBytesView) }

    /// What a policy or a conversion can ask of a value: its kind, an NSNumber's type code, and the casts.
    static func shape(_ value: Any) -> String {
        switch value {
        case let d as [String: Any]: return "{" + d.keys.sorted().map { "\($0):\(shape(d[$0]!))" }.joined(separator: ",") + "}"
        case let a as [Any]: return "[" + a.map(shape).joined(separator: ",") + "]"
        case let s as String: return "s(\(s))"
        case is NSNull: return "null"
        case let n as NSNumber:
            return "n(\(String(cString: n.objCType)) \(n.stringValue) bool:\(String(describing: value as? Bool)) int:\(String(describing: value as? Int)) "
                + "int64:\(String(describing: Values.int64(n))) double:\(String(describing: value as? Double)) boolean:\(Values.isBoolean(n)))"
        default: return "?\(type(of: value))"
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
        #expect(Self.shape(ours) == Self.shape(foundation))
    }

    /// Foundation on Linux takes trailing commas, PostgreSQL's and GoTrue's readers do not; the rest both refuse.
    @Test(arguments: ["[1,]", #"{"a":1,}"#, "", "   ", "[1 2]", #"{"a":1}x"#, "[01]", "[NaN]", "[1e999]", #"["\ud800"]"#, "[\"\u{7}\"]",
                      String(repeating: "[", count: 100) + String(repeating: "]", count: 100)])
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
