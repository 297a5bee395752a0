@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

/// Hostile frames on Realtime's broadcast, presence and token paths, on a
/// private channel of `convoy serve --app survale`, on each store (issue 14:
/// "a hostile frame to the server gets a well-formed error reply, and the
/// server keeps serving"). Each is answered with a `phx_reply` error, or
/// dropped where Supabase drops it (docs/server.md, "Hostile frames"); after
/// each the same socket broadcasts again and the other member has heard
/// nothing of it.
@Suite struct RealtimeHostileFrameTests {
    typealias Answer = HostileRoom.Answer

    /// A frame's event and payload are JSON values, built once and only read.
    struct Frame: @unchecked Sendable {
        let label: String
        let topic: Topic
        let event: Any
        let payload: Any?
        let answer: Answer

        enum Topic: Sendable { case joined, notJoined, huge }

        init(_ label: String, _ topic: Topic, _ event: Any, _ payload: Any?, _ answer: Answer) {
            (self.label, self.topic, self.event, self.payload, self.answer) = (label, topic, event, payload, answer)
        }

        /// A frame on the channel the hostile member joined.
        init(_ label: String, _ event: Any, _ payload: Any?, _ answer: Answer) {
            self.init(label, .joined, event, payload, answer)
        }
    }

    static let noEvent = Answer.error("a broadcast needs an event name")
    static let notAMap = Answer.error("Presence track payload must be a map")
    static let unmatched = Answer.error("unmatched topic")

    static let frames: [Frame] = [
        Frame("broadcast without a payload", "broadcast", nil, noEvent),
        Frame("broadcast whose payload is text", "broadcast", "position", noEvent),
        Frame("broadcast whose payload is an array", "broadcast", [1, 2, 3], noEvent),
        Frame("broadcast whose event is a number", "broadcast", ["type": "broadcast", "event": 5, "payload": ["lat": 1]] as [String: Any], noEvent),
        Frame("broadcast whose event is an object", "broadcast", ["type": "broadcast", "event": ["a": 1], "payload": [:]] as [String: Any], noEvent),
        Frame("track whose payload is an array", "presence", ["type": "presence", "event": "track", "payload": [1, 2]] as [String: Any], notAMap),
        Frame("track whose payload is text", "presence", ["type": "presence", "event": "track", "payload": "M-1"] as [String: Any], notAMap),
        Frame("track whose payload is null", "presence", ["type": "presence", "event": "track", "payload": NSNull()] as [String: Any], notAMap),
        Frame("presence event not known", "presence", ["type": "presence", "event": "dance"], .error(nil)),
        Frame("presence event a number", "presence", ["type": "presence", "event": 7] as [String: Any], .error(nil)),
        Frame("presence without an event", "presence", ["type": "presence"], .ok),
        Frame("untrack before any track", "presence", ["type": "presence", "event": "untrack"], .ok),
        Frame("an event Realtime does not know", "shout", ["x": 1], .error("unknown event shout")),
        Frame("access_token that is a number", "access_token", ["access_token": 42], .nothing),
        Frame("access_token that is an object", "access_token", ["access_token": ["role": "service_role"]] as [String: Any], .nothing),
        Frame("access_token null", "access_token", ["access_token": NSNull()] as [String: Any], .nothing),
        Frame("broadcast on a topic not joined", .notJoined, "broadcast", ["type": "broadcast", "event": "position", "payload": [:]] as [String: Any], unmatched),
        Frame("track on a topic not joined", .notJoined, "presence", ["type": "presence", "event": "track", "payload": [:]] as [String: Any], unmatched),
        Frame("access_token on a topic not joined", .notJoined, "access_token", ["access_token": "x"], unmatched),
        Frame("broadcast on a 10 KB topic", .huge, "broadcast", ["type": "broadcast", "event": "position", "payload": [:]] as [String: Any], unmatched),
        Frame("phx_leave of a topic not joined", .notJoined, "phx_leave", [:] as [String: Any], .ok),
    ]

    @Test(arguments: TestStore.all) func eachFrameGetsItsAnswerAndTheChannelKeepsServing(store: TestStore) async throws {
        let r = try await HostileRoom.open(store)
        for frame in Self.frames {
            let topic = switch frame.topic {
            case .joined: r.topic
            case .notJoined: "realtime:op_\(r.op)_chat"
            case .huge: "realtime:" + String(repeating: "t", count: 10_240)
            }
            let ref = r.hostile.sendRaw(topic, event: frame.event, payload: frame.payload)
            #expect(Answer(try await r.hostile.answer(to: ref)) == frame.answer, "\(frame.label)")
            try await r.stillServes(frame.label)
        }
        await r.f.s.stop()
    }

    /// Text that is not a Phoenix frame has no ref to answer: it is dropped, as a frame
    /// nobody can route, and the socket keeps serving.
    @Test(arguments: TestStore.all) func framesThatDoNotParseAreDropped(store: TestStore) async throws {
        let r = try await HostileRoom.open(store)
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        let texts = [
            ("not JSON", "{{{ not json"),
            ("a JSON array", "[1, 2, 3]"),
            ("a JSON string", "\"phx_join\""),
            ("an event that is a number", #"{"topic":"\#(r.topic)","event":5,"payload":{},"ref":"raw-1"}"#),
            ("a topic that is an object", #"{"topic":{"a":1},"event":"broadcast","payload":{"event":"x"},"ref":"raw-2"}"#),
            ("no topic", #"{"event":"broadcast","payload":{"event":"x","payload":{}},"ref":"raw-3"}"#),
            ("a payload nested 600 deep", #"{"topic":"\#(r.topic)","event":"broadcast","payload":{"event":"x","payload":\#(deep)},"ref":"raw-4"}"#),
            ("a config nested 600 deep", #"{"topic":"realtime:lobby","event":"phx_join","payload":{"config":\#(deep)},"ref":"raw-5"}"#),
        ]
        for (label, text) in texts {
            r.hostile.sendText(text)
            try await r.hostile.sync()
            #expect(await r.hostile.inbox.all().allSatisfy { !$0.contains("raw-") }, "\(label): answered")
            try await r.stillServes(label)
        }
        // Nested as deep as the parser takes, a broadcast is a broadcast.
        let nested = String(repeating: "[", count: 400) + String(repeating: "]", count: 400)
        r.hostile.sendText(#"{"topic":"\#(r.topic)","event":"broadcast","payload":{"type":"broadcast","event":"deep","payload":{"a":\#(nested)}},"ref":"deep-1"}"#)
        #expect(Answer(try await r.hostile.answer(to: "deep-1")) == .ok)
        let heard = try await r.witness.next(topic: r.topic, event: "broadcast")
        #expect((heard["payload"] as? [String: Any])?["event"] as? String == "deep")
        await r.f.s.stop()
    }

    /// `access_token` with a token that is not the member's own valid one closes
    /// the channel as Supabase does (`system` error, then `phx_close`); the member
    /// joins again with its own token and carries on.
    @Test(arguments: TestStore.all) func aBadTokenRefreshClosesTheChannelAndNothingElse(store: TestStore) async throws {
        let r = try await HostileRoom.open(store)
        let outsider = try await r.f.member("B1", callsign: "B-1"), teammate = try await r.f.member("A1", callsign: "M-2")
        let parts = r.m1.token.split(separator: ".")
        let tokens: [(String, String, String)] = [
            ("a forged signature", parts[0] + "." + parts[1] + ".c2lnbmF0dXJl", "Invalid JWT Token"),
            ("tampered claims", parts[0] + "." + parts[1].dropLast(2) + "xx." + parts[2], "Invalid JWT Token"),
            ("not a JWT", "garbage", "Invalid JWT Token"),
            ("another agency's user", outsider.token, "You do not have permissions to read from this Channel topic: op_\(r.op)_locations"),
            ("a teammate not in the operation", teammate.token, "You do not have permissions to read from this Channel topic: op_\(r.op)_locations"),
            ("the anon key", r.f.s.keys.anonKey, "You do not have permissions to read from this Channel topic: op_\(r.op)_locations"),
        ]
        for (label, token, message) in tokens {
            r.hostile.send(r.topic, "access_token", ["access_token": token])
            let system = try await r.hostile.next(topic: r.topic, event: "system")
            #expect((system["payload"] as? [String: Any])?["status"] as? String == "error", "\(label)")
            #expect((system["payload"] as? [String: Any])?["message"] as? String == message, "\(label)")
            _ = try await r.hostile.next(topic: r.topic, event: "phx_close")
            let after = r.hostile.send(r.topic, "broadcast", ["type": "broadcast", "event": "position", "payload": ["as": label]])
            #expect(Answer(try await r.hostile.answer(to: after)) == .error("unmatched topic"), "\(label): still on the channel")
            try await r.joinHostile()
            try await r.stillServes(label)
        }
        // The member's own token, expired: closed too; a fresh sign-in joins again.
        r.f.s.clock.advance(by: 7_200)
        r.hostile.send(r.topic, "access_token", ["access_token": r.m1.token])
        let system = try await r.hostile.next(topic: r.topic, event: "system")
        #expect((system["payload"] as? [String: Any])?["message"] as? String == "Invalid JWT Token")
        _ = try await r.hostile.next(topic: r.topic, event: "phx_close")
        let fresh = try await r.f.signedIn(r.m1)
        let again = try await r.client()
        #expect(HostileRoom.status(try await again.join(r.topic, token: fresh.token, isPrivate: true)) == "ok")
        let heard = await r.witness.inbox.all().filter { $0.contains("\"broadcast\"") }
        #expect(heard.isEmpty, "the witness heard \(heard)")
        await r.f.s.stop()
    }
}
