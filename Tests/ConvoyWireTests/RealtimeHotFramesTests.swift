import ConvoyFormats
import ConvoyTime
import ConvoyJSON
import Foundation
import Synchronization
import Testing

@testable import ConvoyWire

/// The Realtime client's hot frames (a change, a heartbeat's reply) read by `JSONScanner` must come out
/// exactly as the general reader (`JSONSerialization`) reads them; what the scanner refuses, it refuses.
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

    /// What a client reads from `text`, through `receive` (which takes the hot path when it can).
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
    func aChangeReadsAsTheGeneralReaderReadsIt(text: String) async throws {
        #expect(RealtimeClient.mayBeHot(text))
        // The same frame with a space after each colon is not taken by the hot path.
        let general = text.replacingOccurrences(of: "\":", with: "\": ")
        #expect(!RealtimeClient.mayBeHot(general))
        let hot = try #require(await Self.change(text))
        let slow = try #require(await Self.change(general))
        #expect(hot.type == slow.type && hot.table == slow.table && hot.commitTimestamp == slow.commitTimestamp)
        #expect(hot.record == slow.record)
        #expect(!hot.record.isEmpty)
    }

    @Test(arguments: [
        // Values the hot path does not carry as text: left to the general reader, which reads them as before.
        #"{"topic":"realtime:a","event":"postgres_changes","payload":{"data":{"type":"INSERT","table":"t","record":{"x":1.5,"y":"a"}}}}"#,
        #"{"topic":"realtime:a","event":"postgres_changes","payload":{"data":{"type":"INSERT","table":"t","record":{"x":{"b":1,"a":[2]},"y":"a"}}}}"#,
        #"{"topic":"realtime:a","event":"postgres_changes","payload":{"data":{"type":"INSERT","table":"t","record":{"x":12345678901234567890}}}}"#,
    ])
    func valuesItDoesNotCarryAreLeftToTheGeneralReader(text: String) async throws {
        let value = try #require(JSONScanner.parse(text))
        let client = RealtimeClient(url: "ws://127.0.0.1:9/", accessToken: "t", clock: ManualClock())
        #expect(!client.receiveHot(value, receivedAt: 0, bytes: 0))
        let change = try #require(await Self.change(text))
        #expect(change.record["x"] != nil)
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
            #expect(RealtimeClient.mayBeHot(text))
            client.receive(text)
            client.receive(text)  // a second reply to the same heartbeat is not another round trip
            client.sink.finish()
            var trips: [Double] = []
            for await e in client.events { if case .heartbeat(let t) = e { trips.append(t) } }
            #expect(trips == [0.25])
        }
    }
}
