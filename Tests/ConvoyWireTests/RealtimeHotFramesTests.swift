import ConvoyFormats
import ConvoyTime
import ConvoyJSON
import Foundation
import Synchronization
import Testing

@testable import ConvoyWire

/// The Realtime client reads every frame once, with `JSONScanner`, into a typed `JSONValue`: what the scanner
/// refuses is no frame, and what the phone keeps (a change's record, a broadcast) is read from the value as written.
@Suite struct RealtimeHotFramesTests {
    @Test func theScannerReadsJSON() throws {
        let v = try #require(JSONScanner.parse(#" {"a":[1,-2.5e3,true,false,null],"b":"x\"\\\/\n\u00e9\ud83d\ude00","a":{}} "#))
        #expect(v["a"] == .object([]))  // the last of a repeated key
        guard case .object(let members) = v else { Issue.record("not an object"); return }
        #expect(members.count == 3)
        #expect(members[0].value == .array([.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null]))
        #expect(v["b"]?.string == "x\"\\/\né😀")
        #expect(JSONScanner.parse("\"plain é\"") == .string("plain é"))
        #expect(JSONScanner.parse("0") == .number("0"))
    }

    @Test(arguments: ["", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul",
                      "\"open", "\"a\tb\"", #""\x""#, #""\u12""#, #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, "[1] 2", "{\"a\":1}}"])
    func theScannerRefusesWhatIsNotJSON(text: String) {
        #expect(JSONScanner.parse(text) == nil)
    }

    @Test func theWriterWritesWhatTheScannerRead() throws {
        for text in [#"{"a":[1,-2.5e3,true,false,null],"b":"x\"\\\/\n\t\u0001é😀","c":{}}"#, "[]", #""s""#, "0", "null"] {
            let value = try #require(JSONScanner.parse(text))
            #expect(value.text == text)
            #expect(JSONScanner.parse(value.text) == value)
        }
        // Built: members in the order written, numbers as JSON has them.
        let built: JSONValue = ["type": "broadcast", "n": 7, "x": 1.5, "ok": true, "none": .null, "list": [1, "two"]]
        #expect(built.text == #"{"type":"broadcast","n":7,"x":1.5,"ok":true,"none":null,"list":[1,"two"]}"#)
        #expect(JSONValue(["b": .string("2"), "a": 1]).text == #"{"a":1,"b":"2"}"#, "a dictionary's keys sorted")
        #expect(JSONValue(Double.nan) == .null && JSONValue(3.0) == .number("3") && JSONValue(0.1) == .number("0.1"))
        #expect(built.setting("n", to: 8).text.hasPrefix(#"{"type":"broadcast","n":8,"#))
        // Read as a server reads a body: an integer exactly, an optional as its value or null, a list of strings.
        #expect(JSONValue.number("9007199254740993").int64 == 9_007_199_254_740_993 && JSONValue.number("1.0").int64 == nil)
        #expect(JSONValue(String?.none) == .null && JSONValue(["a", "b"]).strings == ["a", "b"] && JSONValue([1, "x"]).strings == nil)
        #expect(JSONScanner.parse(#"{"k":1,"k":2}"#)?.dictionary == ["k": 2], "a repeated name keeps its last value")
    }

    @Test func theScannerRefusesNestingBeyondItsDepth() {
        let deep = String(repeating: "[", count: JSONScanner.maxDepth + 2) + String(repeating: "]", count: JSONScanner.maxDepth + 2)
        #expect(JSONScanner.parse(deep) == nil)
        let fine = String(repeating: "[", count: JSONScanner.maxDepth) + String(repeating: "]", count: JSONScanner.maxDepth)
        #expect(JSONScanner.parse(fine) != nil)
    }

    @Test func theScannerRefusesInvalidUTF8() {
        let bytes: [UInt8] = [0x22, 0xC3, 0x28, 0x22]
        #expect(bytes.withUnsafeBufferPointer { JSONScanner.parse($0) } == nil)
    }

    /// What a client reads from `text`, through `receive`.
    static func events(_ text: String) async -> [RealtimeClient.Event] {
        let client = RealtimeClient(url: "ws://127.0.0.1:9/realtime/v1/websocket", accessToken: "t", clock: ManualClock())
        client.receive(text)
        client.sink.finish()
        var out: [RealtimeClient.Event] = []
        for await e in client.events { out.append(e) }
        return out
    }

    static func change(_ text: String) async -> RealtimeClient.Change? {
        guard case .change(_, let c)? = await events(text).first else { return nil }
        return c
    }

    @Test(arguments: [
        #"{"topic":"realtime:a","event":"postgres_changes","ref":null,"payload":{"ids":[1],"data":{"type":"INSERT","table":"locations","commit_timestamp":"2026-11-27T10:00:00.123Z","record":{"id":42,"sender_id":"u-1","payload":"AbC+/=","created_at":"2026-11-27T10:00:00.123+00:00","n":null,"flag":true,"neg":-7,"zero":0}}}}"#,
        #"{"payload":{"data":{"record":{"id":1}}},"event":"postgres_changes","topic":"realtime:a"}"#,
        #"{"topic":"realtime:a","event":"postgres_changes","payload":{"data":{"type":"UPDATE","table":"t","record":{"s":"é\u00e9\/"}}}}"#,
    ])
    func aChangeReadsTheSameWhateverItsSpacing(text: String) async throws {
        let spaced = text.replacingOccurrences(of: "\":", with: "\": ")
        let change = try #require(await Self.change(text))
        let same = try #require(await Self.change(spaced))
        #expect(change.type == same.type && change.table == same.table && change.commitTimestamp == same.commitTimestamp)
        #expect(change.record == same.record)
        #expect(!change.record.isEmpty)
    }

    @Test func aChangesRecordIsReadAsText() async throws {
        let text = #"{"topic":"realtime:a","event":"postgres_changes","ref":null,"payload":{"data":{"type":"INSERT","table":"locations","commit_timestamp":"2026-11-27T10:00:00.123Z","record":{"id":42,"sender_id":"u-1","s":"é\u00e9\/","n":null,"flag":true,"neg":-7}}}}"#
        let change = try #require(await Self.change(text))
        #expect(change.type == "INSERT" && change.table == "locations" && change.commitTimestamp == "2026-11-27T10:00:00.123Z")
        #expect(change.record == ["id": "42", "sender_id": "u-1", "s": "éé/", "flag": "true", "neg": "-7"], "a null is no value")
    }

    @Test(arguments: [
        // A fraction and a big integer as written; a nested value as its JSON.
        (#"{"x":1.5,"y":"a"}"#, "1.5"),
        (#"{"x":{"b":1,"a":[2]},"y":"a"}"#, #"{"b":1,"a":[2]}"#),
        (#"{"x":12345678901234567890}"#, "12345678901234567890"),
    ])
    func valuesThatAreNotTextAreReadAsWritten(record: String, x: String) async throws {
        let text = #"{"topic":"realtime:a","event":"postgres_changes","payload":{"data":{"type":"INSERT","table":"t","record":"# + record + "}}}"
        let change = try #require(await Self.change(text))
        #expect(change.record["x"] == x)
    }

    @Test func aBroadcastKeepsItsPayloadAsItCame() async throws {
        let text = #"{"topic":"realtime:op","event":"broadcast","payload":{"event":"position","payload":{"user_id":"u-1","lat":51.5,"seq":7,"m":{"a":1}},"type":"broadcast"},"ref":null}"#
        guard case .broadcast(_, let b)? = await Self.events(text).first else {
            Issue.record("no broadcast")
            return
        }
        #expect(b.event == "position" && b.json == #"{"user_id":"u-1","lat":51.5,"seq":7,"m":{"a":1}}"#)
        #expect(b.payload == ["user_id": "u-1", "lat": "51.5", "seq": "7", "m": #"{"a":1}"#])
    }

    @Test func whatIsNotAChangeIsNoEvent() async {
        #expect(await Self.events(#"{"topic":"realtime:a","event":"postgres_changes","payload":{"data":"x"}}"#).isEmpty)
        #expect(await Self.events(#"{"topic":"realtime:a","event":"postgres_changes"}"#).isEmpty)
    }

    @Test func aHeartbeatIsWrittenAsTheGeneralWriterWritesIt() {
        for ref in ["1", "42", "1234567"] {
            #expect(PhoenixFrame.heartbeatText(ref: ref) == PhoenixFrame.heartbeat(ref: ref).text)
        }
    }

    @Test func aHeartbeatsReplyIsReadWithAStringOrANumericRef() async {
        let clock = ManualClock()
        for ref in [#""5""#, "5"] {
            let client = RealtimeClient(url: "ws://127.0.0.1:9/", accessToken: "t", clock: clock)
            client.state.withLock { $0.pendingHeartbeat = ("5", clock.now()) }
            clock.advance(by: 0.25)
            let text = #"{"event":"phx_reply","payload":{"response":{},"status":"ok"},"ref":"# + ref + #","topic":"phoenix"}"#
            client.receive(text)
            client.receive(text)  // a second reply to the same heartbeat is not another round trip
            client.sink.finish()
            var trips: [Double] = []
            for await e in client.events { if case .heartbeat(let t) = e { trips.append(t) } }
            #expect(trips == [0.25])
        }
    }
}
