import Foundation
import Testing
@testable import ConvoyServer

/// One Survale operation's private locations channel with two members on it,
/// for hostile frames (RealtimeHostileFrameTests, RealtimeHostileJoinTests):
/// `hostile` (a member, joined with `ack`) sends them, `witness` (the case
/// agent) must hear nothing of them.
struct HostileRoom {
    let f: SurvaleFixture
    let ca: SurvaleFixture.Member
    let m1: SurvaleFixture.Member
    let op: String
    let topic: String
    let hostile: PhoenixTestClient
    let witness: PhoenixTestClient

    static func open(_ store: TestStore) async throws -> HostileRoom {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let op = try await f.activeOperation(by: ca, with: [m1])
        let topic = "realtime:op_\(op)_locations"
        let room = HostileRoom(f: f, ca: ca, m1: m1, op: op, topic: topic,
                               hostile: try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey),
                               witness: try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey))
        #expect(status(try await room.witness.join(topic, token: ca.token, presenceKey: ca.id, isPrivate: true)) == "ok")
        try await room.joinHostile()
        return room
    }

    /// The hostile member on the channel (again), as its phone joins it.
    func joinHostile(token: String? = nil) async throws {
        #expect(Self.status(try await hostile.join(topic, token: token ?? m1.token, ack: true, presenceKey: m1.id, isPrivate: true)) == "ok")
    }

    func client() async throws -> PhoenixTestClient {
        try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
    }

    /// After a hostile frame: the hostile socket still broadcasts (acked), and that
    /// broadcast is the first broadcast or presence change the witness hears, so
    /// nothing of the hostile frame reached it.
    func stillServes(_ label: String) async throws {
        let ref = hostile.send(topic, "broadcast", ["type": "broadcast", "event": "marker", "payload": ["after": label]])
        #expect(Self.status(try await hostile.reply(to: ref)) == "ok", "after \(label): the socket no longer serves")
        let heard = try await witness.next { ["broadcast", "presence_diff"].contains($0["event"] as? String) }
        let payload = heard["payload"] as? [String: Any]
        #expect(payload?["event"] as? String == "marker" && (payload?["payload"] as? [String: Any])?["after"] as? String == label,
                "after \(label): the witness heard \(heard)")
    }

    /// How the server answers one frame.
    enum Answer: Equatable, CustomStringConvertible {
        /// A `phx_reply` with status error, and its `reason` when there is one.
        case error(String?)
        case ok
        /// No reply at all (a heartbeat sent after it is answered first).
        case nothing

        init(_ reply: [String: Any]?) {
            guard let reply else { self = .nothing; return }
            self = HostileRoom.status(reply) == "ok" ? .ok : .error(HostileRoom.reason(reply))
        }

        var description: String {
            switch self {
            case .error(let reason): "error(\(reason ?? "no reason"))"
            case .ok: "ok"
            case .nothing: "nothing"
            }
        }
    }

    static func status(_ reply: [String: Any]) -> String? { (reply["payload"] as? [String: Any])?["status"] as? String }

    static func reason(_ reply: [String: Any]) -> String? {
        ((reply["payload"] as? [String: Any])?["response"] as? [String: Any])?["reason"] as? String
    }
}
