import Foundation
import Testing
@testable import ConvoyServer

/// Hostile `phx_join` configs, oversized frames and re-joins on `convoy serve
/// --app survale`, on each store: a config Supabase cannot cast falls back to
/// its defaults as Supabase's does (a channel that is then public, never the
/// private room), the booleans Supabase reads from text are read so, and no
/// outsider hears the operation's private channel whatever it sends.
@Suite struct RealtimeHostileJoinTests {
    typealias Answer = HostileRoom.Answer

    /// A join's config and token; `private` or not is for the channel it should end on.
    struct Join: @unchecked Sendable {
        let label: String
        let topic: String?
        let payload: Any?
        let answer: Answer
    }

    static func joins(_ r: HostileRoom, outsider: String) -> [Join] {
        let deny = Answer.error("Unauthorized: You do not have permissions to read from this Channel topic: op_\(r.op)_locations")
        let hugeName = String(repeating: "t", count: 10_240)
        return [
            Join(label: "config that is text", topic: nil, payload: ["config": "private", "access_token": outsider], answer: .ok),
            Join(label: "config that is an array", topic: nil, payload: ["config": [true], "access_token": outsider], answer: .ok),
            Join(label: "private that is an object", topic: nil, payload: ["config": ["private": ["on": true]], "access_token": outsider], answer: .ok),
            Join(label: "private that is a number", topic: nil, payload: ["config": ["private": 2], "access_token": outsider], answer: .ok),
            Join(label: "private as the text \"true\"", topic: nil, payload: ["config": ["private": "true"], "access_token": outsider], answer: deny),
            Join(label: "private as the text \"TRUE\"", topic: nil, payload: ["config": ["private": "TRUE"], "access_token": outsider], answer: deny),
            Join(label: "access_token that is a number, private", topic: nil, payload: ["config": ["private": true], "access_token": 42], answer: deny),
            Join(label: "no payload at all", topic: nil, payload: nil, answer: .ok),
            Join(label: "a payload that is an array", topic: nil, payload: [1, 2], answer: .ok),
            Join(label: "presence key an object", topic: nil, payload: ["config": ["presence": ["key": ["id": 1]]], "access_token": outsider], answer: .ok),
            Join(label: "presence key of 10 KB", topic: nil, payload: ["config": ["presence": ["key": hugeName]], "access_token": outsider], answer: .ok),
            Join(label: "broadcast config that is text", topic: nil, payload: ["config": ["broadcast": "ack"], "access_token": outsider], answer: .ok),
            Join(label: "broadcast self and ack as numbers", topic: nil,
                 payload: ["config": ["broadcast": ["self": 7, "ack": [1]]], "access_token": outsider], answer: .ok),
            Join(label: "postgres_changes that is text", topic: nil, payload: ["config": ["postgres_changes": "all"], "access_token": outsider], answer: .ok),
            Join(label: "a 10 KB topic, private", topic: "realtime:op_" + hugeName,
                 payload: ["config": ["private": true], "access_token": outsider],
                 answer: .error("Unauthorized: You do not have permissions to read from this Channel topic: op_" + hugeName)),
            Join(label: "a 10 KB topic, public", topic: "realtime:" + hugeName, payload: ["access_token": outsider], answer: .ok),
            Join(label: "a topic without realtime:", topic: "op_\(r.op)_locations", payload: ["config": ["private": true], "access_token": outsider],
                 answer: .error("TopicNameRequired: topics start with realtime:")),
        ]
    }

    @Test(arguments: TestStore.all) func aConfigThatDoesNotCastNeverReachesThePrivateRoom(store: TestStore) async throws {
        let r = try await HostileRoom.open(store)
        let outsider = try await r.f.member("B1", callsign: "B-1")
        var sockets: [(String, PhoenixTestClient)] = []
        for join in Self.joins(r, outsider: outsider.token) {
            let socket = try await r.client()
            var frame: [String: Any] = ["topic": join.topic ?? r.topic, "event": "phx_join", "ref": "j1", "join_ref": "j1"]
            if let payload = join.payload { frame["payload"] = payload }
            socket.sendText(String(decoding: try JSONSerialization.data(withJSONObject: frame), as: UTF8.self))
            #expect(Answer(try await socket.answer(to: "j1")) == join.answer, "\(join.label)")
            sockets.append((join.label, socket))
        }
        // The private room's broadcasts and presence reach its members, and no socket above.
        let track = r.hostile.send(r.topic, "presence", ["type": "presence", "event": "track", "payload": ["callsign": "M-1"]])
        #expect(HostileRoom.status(try await r.hostile.reply(to: track)) == "ok")
        _ = try await r.witness.next(topic: r.topic, event: "presence_diff")
        try await r.stillServes("the joins")
        for (label, socket) in sockets {
            try await socket.sync()
            let heard = await socket.inbox.all().filter { $0.contains("marker") || $0.contains("M-1") }
            #expect(heard.isEmpty, "\(label): heard the private room: \(heard)")
        }
        // A member whose client sends "true" as text is on the private room, as on Supabase.
        let member = try await r.client()
        let joined = member.send(r.topic, "phx_join", ["config": ["private": "True", "broadcast": ["self": "false"]], "access_token": r.m1.token])
        #expect(Answer(try await member.reply(to: joined)) == .ok)
        _ = r.witness.send(r.topic, "broadcast", ["type": "broadcast", "event": "to-members", "payload": [:]])
        #expect((try await member.next(topic: r.topic, event: "broadcast")["payload"] as? [String: Any])?["event"] as? String == "to-members")
        await r.f.s.stop()
    }

    /// A frame over 1 MiB closes that socket with 1009 (message too big) before it
    /// is read; the server, and the channel's other sockets, keep serving.
    @Test(arguments: TestStore.all) func aFrameOverOneMebibyteClosesOnlyItsSocket(store: TestStore) async throws {
        let r = try await HostileRoom.open(store)
        let raw = try await HostileClientTests.upgradedClient(r.f.s)
        let big = #"{"topic":"\#(r.topic)","event":"broadcast","payload":{"type":"broadcast","event":"x","payload":{"blob":""#
            + String(repeating: "a", count: 1 << 20) + #""}},"ref":"1"}"#
        raw.send(Self.maskedText(Array(big.utf8)))
        let (bytes, closed) = await raw.read(within: HostileClientTests.bound)
        #expect(HostileClientTests.closeCode(bytes) == 1009)
        #expect(closed)
        try await r.stillServes("a frame over 1 MiB")
        await r.f.s.stop()
    }

    /// A re-join replaces the channel, as Phoenix does: the presence it tracked ends
    /// with it (it used to stay in the room it was tracked in, for good, when the
    /// re-join moved the channel between the public and the private room).
    @Test(arguments: TestStore.all) func aRejoinEndsThePresenceOfTheChannelItReplaces(store: TestStore) async throws {
        let r = try await HostileRoom.open(store)
        let roamer = try await r.client()
        let lobby = try await r.client()
        #expect(HostileRoom.status(try await lobby.join(r.topic, token: r.ca.token, presenceKey: "lobby")) == "ok")
        #expect(HostileRoom.status(try await roamer.join(r.topic, token: r.m1.token, presenceKey: "roamer")) == "ok")
        let track = roamer.send(r.topic, "presence", ["type": "presence", "event": "track", "payload": ["callsign": "roamer"]])
        #expect(HostileRoom.status(try await roamer.reply(to: track)) == "ok")
        _ = try await lobby.next { $0["event"] as? String == "presence_diff" && "\($0)".contains("roamer") }
        // Public → private on one socket: the public room sees it leave.
        #expect(HostileRoom.status(try await roamer.join(r.topic, token: r.m1.token, presenceKey: "roamer", isPrivate: true)) == "ok")
        let left = try await lobby.next(topic: r.topic, event: "presence_diff")
        #expect(((left["payload"] as? [String: Any])?["leaves"] as? [String: Any])?["roamer"] != nil, "\(left)")
        // And a newcomer to the public room finds nobody there.
        let newcomer = try await r.client()
        #expect(HostileRoom.status(try await newcomer.join(r.topic, token: r.ca.token)) == "ok")
        let state = try await newcomer.next(topic: r.topic, event: "presence_state")
        #expect((state["payload"] as? [String: Any])?.isEmpty == true, "a ghost: \(state)")
        await r.f.s.stop()
    }

    /// A client's text frame, masked (RFC 6455 §5.3), with a 64-bit length.
    static func maskedText(_ payload: [UInt8]) -> [UInt8] {
        let mask: [UInt8] = [0x5A, 0x17, 0xC3, 0x08]
        let length = UInt64(payload.count)
        let size = (0..<8).reversed().map { UInt8(truncatingIfNeeded: length >> (8 * UInt64($0))) }
        return [0x81, 0x80 | 127] + size + mask + payload.enumerated().map { $1 ^ mask[$0 % 4] }
    }
}
