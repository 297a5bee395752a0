import ConvoyFormats
import ConvoyJSON
import ConvoyWire
import Foundation
import Testing

/// The one Phoenix frame model the client, the server and the probes share.
@Suite struct PhoenixFrameTests {
    static func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func aClientJoinCarriesItsRefTwiceAndItsToken() throws {
        let join = PhoenixFrame.join("realtime:x", config: ["postgres_changes": [["event": "INSERT", "table": "t"]]],
                                     accessToken: "tok", ref: "7")
        let o = try Self.object(join.text)
        #expect(o["topic"] as? String == "realtime:x" && o["event"] as? String == "phx_join")
        #expect(o["ref"] as? String == "7" && o["join_ref"] as? String == "7")
        let payload = try #require(o["payload"] as? [String: Any])
        #expect(payload["access_token"] as? String == "tok" && payload["config"] is [String: Any])
        let anonymous = try Self.object(PhoenixFrame.join("realtime:x", config: [:], accessToken: nil, ref: "1").text)
        #expect((anonymous["payload"] as? [String: Any])?["access_token"] == nil)
    }

    @Test func aServerPushHasANullRefAndNoJoinRef() throws {
        let push = PhoenixFrame.system("realtime:x", status: "ok", message: PhoenixFrame.subscribedMessage, channel: "x")
        let o = try Self.object(push.text)
        #expect(o["ref"] is NSNull && o.keys.contains("ref") && !o.keys.contains("join_ref"))
        #expect((o["payload"] as? [String: Any])?["extension"] as? String == "postgres_changes")
        // Sorted keys: the same frame is the same text.
        #expect(push.text == PhoenixFrame.system("realtime:x", status: "ok", message: PhoenixFrame.subscribedMessage, channel: "x").text)
        #expect(push.text.hasPrefix("{\"event\":\"system\""))
    }

    @Test func readsWhatItWritesAndWhatOthersWrite() throws {
        let reply = PhoenixFrame.reply("realtime:x", ref: "3", status: "error", response: ["reason": "nope"])
        let back = try #require(PhoenixFrame(text: reply.text))
        #expect(back.topic == "realtime:x" && back.event == PhoenixFrame.Event.reply && back.ref == "3" && back.joinRef == nil)
        #expect(back.status == "error" && back.response["reason"]?.string == "nope")
        // A numeric ref (some clients send them) reads as its text; a missing payload as empty.
        let numeric = try #require(PhoenixFrame(text: #"{"topic":"phoenix","event":"heartbeat","ref":12,"join_ref":null}"#))
        #expect(numeric.ref == "12" && numeric.joinRef == nil && numeric.payload == .object([]))
    }

    @Test func aChangeIsReadFromItsData() throws {
        let text = #"{"topic":"realtime:b","event":"postgres_changes","ref":null,"payload":{"ids":[1],"data":{"type":"INSERT","table":"t","commit_timestamp":"2026-11-25T00:00:00Z","record":{"id":1,"body":"hi"}}}}"#
        let change = try #require(PhoenixFrame(text: text)?.change)
        #expect(change.type == "INSERT" && change.table == "t" && change.commitTimestamp == "2026-11-25T00:00:00Z")
        #expect(change.record["body"]?.string == "hi")
        #expect(PhoenixFrame(topic: "realtime:b", event: "broadcast", payload: ["data": .object([])]).change == nil)
    }

    @Test(arguments: ["", "null", "[]", "{}", #"{"topic":"x"}"#, #"{"event":"e"}"#, #"{"topic":1,"event":"e"}"#, "{not json"])
    func whatIsNotAFrameIsRefused(text: String) {
        #expect(PhoenixFrame(text: text) == nil)
        #expect(PhoenixFrame.head(text) == nil)
    }

    /// `head` (the server's heartbeat path) reads topic, event and ref as the general reader does.
    @Test(arguments: [#"{"event":"heartbeat","payload":{},"ref":"12","topic":"phoenix"}"#, #"{"topic":"phoenix","event":"heartbeat","ref":12}"#,
                      #"{"topic":"phoenix","event":"heartbeat","ref":null,"join_ref":"3"}"#, #"{"topic":"phoenix","event":"heartbeat"}"#,
                      #"{"topic":"phoenix","event":"heartbeat","ref":-7,"payload":"odd"}"#, #"{"topic":"r\/a","event":"x","ref":"é"}"#])
    func theHeadIsReadAsTheFrameIs(text: String) throws {
        let frame = try #require(PhoenixFrame(text: text))
        let head = try #require(PhoenixFrame.head(text))
        #expect(head.topic == frame.topic && head.event == frame.event && head.ref == frame.ref)
    }

    /// A frame nests as deep as Foundation's reader took (a request body, far less: `JSONScanner.maxDepth`).
    @Test func aFrameNestsAsDeepAsFoundationTook() {
        func frame(_ depth: Int) -> String {
            #"{"topic":"t","event":"broadcast","payload":{"p":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}}"
        }
        #expect(PhoenixFrame(text: frame(400)) != nil)
        #expect(PhoenixFrame(text: frame(JSONScanner.foundationDepth + 2)) == nil)
        #expect(JSONScanner.parse(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)) == nil)
    }

    @Test func aFractionalRefIsLeftToTheGeneralReader() {
        #expect(PhoenixFrame.head(#"{"topic":"phoenix","event":"heartbeat","ref":1.5}"#) == nil)
        #expect(PhoenixFrame(text: #"{"topic":"phoenix","event":"heartbeat","ref":1.5}"#)?.ref == "1.5")
    }
}
