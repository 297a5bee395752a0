@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

/// Survale's backend on both stores: the operation lifecycle, row-level
/// security between members, teams and agencies, its private channels,
/// auto-end and the purge, the same answers from SQLite and PostgreSQL.
@Suite struct SurvaleServerTests {
    static func status(_ reply: [String: Any]) -> String? { (reply["payload"] as? [String: Any])?["status"] as? String }

    @Test(arguments: TestStore.all) func theLifecycleAndWhoSeesWhat(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let m2 = try await f.member("A1", callsign: "M-2"), other = try await f.member("A2", callsign: "OT-1")
        let outsider = try await f.member("B1", callsign: "B-1")

        let created = try await f.rpc("create_operation", ["name": "Harbor", "incident_number": "24-17"], as: ca)
        let op = try #require(created.object["id"] as? String)
        #expect(created.object["status"] as? String == "draft" && created.object["case_agent_id"] as? String == ca.id)
        #expect(try await f.get("operations?id=eq.\(op)", as: m1).isEmpty, "a draft is the case agent's")
        #expect(try await f.rpc("start_operation", ["operation_id": op], as: m1).status == 403, "only the case agent starts")
        #expect(try await f.rpc("create_operation", ["name": "x"], as: TestFixtureless.member(f)).status == 403,
                "a user the agency did not provision has no operations")

        // Invites: to the agency's users only; the invitee answers.
        let invite = try await f.post("operation_invites", ["operation_id": op, "invitee_id": m1.id, "invited_by": ca.id], as: ca)
        #expect(invite.status == 201)
        #expect(try await f.post("operation_invites", ["operation_id": op, "invitee_id": outsider.id, "invited_by": ca.id], as: ca).status == 403,
                "another agency's user cannot be invited")
        #expect(try await f.post("operation_invites", ["operation_id": op, "invitee_id": m2.id, "invited_by": m1.id], as: m1).status == 403)
        let inviteID = try #require(invite.rows.first?["id"])
        #expect(try await f.rpc("respond_to_invite", ["invite_id": inviteID, "accept": true], as: outsider).status == 403)
        #expect(try await f.rpc("respond_to_invite", ["invite_id": inviteID, "accept": true], as: m1).status == 200)
        #expect(try await f.get("operations?id=eq.\(op)", as: m1).count == 1, "members see their operation")

        let started = try await f.rpc("start_operation", ["operation_id": op], as: ca)
        #expect(started.object["status"] as? String == "active" && started.object["started_at"] as? String != nil)
        #expect(try await f.rpc("start_operation", ["operation_id": op], as: ca).status == 400, "started once")
        #expect(try await f.get("operations?id=eq.\(op)", as: m2).count == 1, "the team sees its started operations")
        #expect(try await f.get("operations?id=eq.\(op)", as: other).isEmpty, "another team does not")
        #expect(try await f.get("operations?id=eq.\(op)", as: outsider).isEmpty, "nor another agency")
        #expect(try await f.request("PATCH", "operations?id=eq.\(op)", ["status": "ended"], as: ca).status == 403,
                "the status changes through end_operation only")
        #expect(try await f.request("PATCH", "operations?id=eq.\(op)", ["name": "Harbor II"], as: ca).status == 204)

        // Join requests: the team asks, the case agent decides.
        #expect(try await f.post("join_requests", ["operation_id": op, "requester_id": other.id], as: other).status == 403)
        let asked = try await f.post("join_requests", ["operation_id": op, "requester_id": m2.id], as: m2)
        #expect(asked.status == 201)
        let requestID = try #require(asked.rows.first?["id"])
        #expect(try await f.rpc("decide_join_request", ["request_id": requestID, "approve": true], as: m1).status == 403)
        #expect(try await f.rpc("decide_join_request", ["request_id": requestID, "approve": true], as: ca).status == 200)
        #expect(try await f.get("operation_members?operation_id=eq.\(op)&select=user_id", as: m2).count == 3)
        // One pending request a member: a member who left may ask again, and is let in again.
        #expect(try await f.rpc("leave_operation", ["operation_id": op], as: m2).status == 200)
        let again = try await f.post("join_requests", ["operation_id": op, "requester_id": m2.id], as: m2)
        #expect(again.status == 201)
        #expect(try await f.post("join_requests", ["operation_id": op, "requester_id": m2.id], as: m2).status == 409, "one pending at a time")
        let againID = try #require(again.rows.first?["id"])
        #expect(try await f.rpc("decide_join_request", ["request_id": againID, "approve": true], as: ca).status == 200)
        #expect(try await f.get("operation_members?operation_id=eq.\(op)&user_id=eq.\(m2.id)&left_at=is.null&select=user_id", as: m2).count == 1)

        // Chat and the archive: members write as themselves, others not at all.
        #expect(try await f.post("op_messages", ["operation_id": op, "sender_id": m1.id, "body": "on scene"], as: m1).status == 201)
        #expect(try await f.post("op_messages", ["operation_id": op, "sender_id": ca.id, "body": "spoof"], as: m1).status == 403)
        #expect(try await f.post("op_messages", ["operation_id": op, "sender_id": outsider.id, "body": "hi"], as: outsider).status == 403)
        let point: [String: Any] = ["operation_id": op, "user_id": m1.id, "lat": 51.5, "lon": -0.12, "accuracy": 8.5, "fix": "reduced",
                                    "recorded_at": "2026-11-25T12:00:00Z"]
        #expect(try await f.post("locations_archive", point, as: m1).status == 201)
        #expect(try await f.post("locations_archive", point.merging(["user_id": outsider.id]) { $1 }, as: outsider).status == 403)
        #expect(try await f.get("op_messages?operation_id=eq.\(op)", as: outsider).isEmpty)
        let archived = try await f.get("locations_archive?operation_id=eq.\(op)", as: m2)
        #expect(archived.first?["fix"] as? String == "reduced" && (archived.first?["lat"] as? NSNumber)?.doubleValue == 51.5)
        // A filter on a decimal column compares the decimal (PostgreSQL was given its whole part: eq.51.5 found
        // nothing there, gt.51.2 meant > 51); the whole part is the control.
        for (filter, rows) in [("lat=eq.51.5", 1), ("lat=gt.51.2", 1), ("lat=gt.51.9", 0), ("lat=eq.51", 0), ("lon=lt.-0.1", 1), ("lon=lt.-0.5", 0)] {
            #expect(try await f.get("locations_archive?operation_id=eq.\(op)&\(filter)", as: m2).count == rows, "\(store) \(filter)")
        }

        // Nearby: other agencies see a generic marker; the operation's own agency does not.
        #expect(try await f.post("staging_areas", ["operation_id": op, "label": "Lot 4", "lat": 51.5012, "lon": -0.1201], as: ca).status == 201)
        #expect(try await f.post("staging_areas", ["operation_id": op, "label": "x", "lat": 1, "lon": 1], as: m1).status == 403)
        let markers = try await f.rpc("nearby_operations", ["lat": 51.51, "lon": -0.12, "radius_m": 5000], as: outsider).json as? [[String: Any]]
        #expect(markers?.count == 1 && markers?.first?["case_agent"] as? String == "CA-1" && markers?.first?["id"] == nil)
        #expect((markers?.first?["lat"] as? NSNumber)?.doubleValue == 51.5)
        #expect((try await f.rpc("nearby_operations", ["lat": 51.51, "lon": -0.12], as: m1).json as? [Any])?.isEmpty == true)

        // The end: by the case agent only; members stop writing and keep reading (replay).
        #expect(try await f.rpc("end_operation", ["operation_id": op], as: m1).status == 403)
        #expect(try await f.rpc("leave_operation", ["operation_id": op], as: m2).status == 200)
        let ended = try await f.rpc("end_operation", ["operation_id": op], as: ca)
        #expect(ended.object["status"] as? String == "ended" && ended.object["end_reason"] as? String == "case_agent")
        #expect(try await f.post("op_messages", ["operation_id": op, "sender_id": m1.id, "body": "late"], as: m1).status == 403)
        #expect(try await f.get("op_messages?operation_id=eq.\(op)", as: m1).count == 1)
        await f.s.stop()
    }

    @Test(arguments: TestStore.all) func privateChannelsAreTheCurrentMembers(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let teammate = try await f.member("A1", callsign: "M-2"), outsider = try await f.member("B1", callsign: "B-1")
        let op = try await f.activeOperation(by: ca, with: [m1])
        let topic = "realtime:op_\(op)_locations"
        let one = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        let two = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        #expect(Self.status(try await one.join(topic, token: m1.token, ack: true, presenceKey: m1.id, isPrivate: true)) == "ok")
        #expect(Self.status(try await two.join(topic, token: ca.token, presenceKey: ca.id, isPrivate: true)) == "ok")
        // A member of another operation, every other kind of credential: refused.
        let otherOp = try await f.activeOperation(by: teammate, with: [])
        let parts = m1.token.split(separator: ".")
        let forged = parts[0] + "." + parts[1] + ".c2lnbmF0dXJl"
        let tampered = parts[0] + "." + parts[1].dropLast(2) + "xx." + parts[2]
        for (who, token) in [("a teammate not in it", teammate.token), ("another agency", outsider.token), ("the anon key", nil as String?),
                             ("a forged signature", String(forged)), ("tampered claims", String(tampered)), ("no token at all", "")] {
            let probe = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
            #expect(Self.status(try await probe.join(topic, token: token, isPrivate: true)) == "error", "\(who) joined")
        }
        #expect(otherOp != op)
        let sent = one.send(topic, "broadcast", ["type": "broadcast", "event": "position", "payload": ["lat": 51.5, "user_id": m1.id]])
        #expect(Self.status(try await one.reply(to: sent)) == "ok")
        let got = try await two.next(topic: topic, event: "broadcast")
        #expect(((got["payload"] as? [String: Any])?["payload"] as? [String: Any])?["user_id"] as? String == m1.id)
        let track = one.send(topic, "presence", ["type": "presence", "event": "track", "payload": ["callsign": "M-1"]])
        #expect(Self.status(try await one.reply(to: track)) == "ok")
        _ = try await two.next(topic: topic, event: "presence_diff")

        // An expired token: refused (as InvalidJWTToken), the member's own included.
        f.s.clock.advance(by: 7_200)
        let expired = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        let refused = try await expired.join("realtime:op_\(op)_chat", token: m1.token, isPrivate: true)
        #expect(Self.status(refused) == "error")
        #expect((((refused["payload"] as? [String: Any])?["response"] as? [String: Any])?["reason"] as? String)?.hasPrefix("InvalidJWTToken") == true)

        // Ended: no member joins its channels again.
        #expect(try await f.rpc("end_operation", ["operation_id": op], as: try await f.signedIn(ca)).status == 200)
        let late = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        let again = try await f.signedIn(m1)
        #expect(Self.status(try await late.join(topic, token: again.token, isPrivate: true)) == "error")
        await f.s.stop()
    }

    /// Direct messages (spec §6: ephemeral, no storage): a pair's channel `op_{id}_dm_{a}_{b}` is the two's alone,
    /// while both are current members of the active operation; a third member of the same operation is refused.
    @Test(arguments: TestStore.all) func aPairsDirectChannelIsTheTwosAlone(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let m2 = try await f.member("A1", callsign: "M-2")
        let op = try await f.activeOperation(by: ca, with: [m1, m2])
        let (lo, hi) = ca.id < m1.id ? (ca.id, m1.id) : (m1.id, ca.id)
        let topic = "realtime:op_\(op)_dm_\(lo)_\(hi)"
        let one = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        let two = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        #expect(Self.status(try await one.join(topic, token: m1.token, ack: true, isPrivate: true)) == "ok")
        #expect(Self.status(try await two.join(topic, token: ca.token, isPrivate: true)) == "ok")
        let third = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        #expect(Self.status(try await third.join(topic, token: m2.token, isPrivate: true)) == "error", "a teammate joined another pair's channel")
        // The two in the other order, or a name that is not a pair's: nobody's channel.
        let swapped = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        #expect(Self.status(try await swapped.join("realtime:op_\(op)_dm_\(hi)_\(lo)", token: m1.token, isPrivate: true)) == "error")
        let sent = one.send(topic, "broadcast", ["type": "broadcast", "event": "dm", "payload": ["from": m1.id, "seq": 1, "text": "on my way"]])
        #expect(Self.status(try await one.reply(to: sent)) == "ok")
        let got = try await two.next(topic: topic, event: "broadcast")
        #expect(((got["payload"] as? [String: Any])?["payload"] as? [String: Any])?["text"] as? String == "on my way")
        await f.s.stop()
    }

    @Test(arguments: TestStore.all) func autoEndsAfterTenMinutesWithEveryoneOff(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store) { $0.tokenTTL = 86_400 }
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let left = try await f.activeOperation(by: ca, with: [m1])
        let watched = try await f.activeOperation(by: ca, with: [m1])
        let status = { (op: String) in try await f.get("operations?id=eq.\(op)&select=status,end_reason", as: ca).first ?? [:] }

        // Someone stays on `watched`'s channel; nobody on `left`'s.
        let phone = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        #expect(Self.status(try await phone.join("realtime:op_\(watched)_chat", token: m1.token, isPrivate: true)) == "ok")
        #expect(try await f.s.server.housekeepingOnce().isEmpty)
        f.s.clock.advance(by: 599)
        #expect(try await f.s.server.housekeepingOnce().isEmpty, "not before ten minutes")
        f.s.clock.advance(by: 2)
        let ended = try await f.s.server.housekeepingOnce()
        #expect(ended.count == 1 && ended.first?.contains(left) == true)
        #expect(try await status(left)["end_reason"] as? String == "auto_end")
        #expect(try await status(watched)["status"] as? String == "active", "never while someone is connected")

        // The last one leaves: idle from the next round, ended ten minutes later.
        phone.send("realtime:op_\(watched)_chat", "phx_leave")
        _ = try await phone.next(topic: "realtime:op_\(watched)_chat", event: "phx_close")
        #expect(try await f.s.server.housekeepingOnce().isEmpty)
        f.s.clock.advance(by: 601)
        #expect(try await f.s.server.housekeepingOnce().count == 1)
        #expect(try await status(watched)["status"] as? String == "ended")
        await f.s.stop()
    }

    @Test(arguments: TestStore.all) func thePurgeTakesEverythingSevenDaysAfterTheEnd(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store) {
            $0.tokenTTL = 30 * 86_400
            $0.retention = 7 * 86_400
        }
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let op = try await f.activeOperation(by: ca, with: [m1])
        let open = try await f.activeOperation(by: ca, with: [m1])
        for o in [op, open] {
            #expect(try await f.post("op_messages", ["operation_id": o, "sender_id": m1.id, "body": "copy"], as: m1).status == 201)
        }
        #expect(try await f.rpc("end_operation", ["operation_id": op], as: ca).status == 200)
        f.s.clock.advance(by: 7 * 86_400 - 1)
        try await f.s.server.purgeOnce()
        #expect(try await f.get("op_messages?operation_id=eq.\(op)", as: m1).count == 1, "nothing goes before seven days")
        f.s.clock.advance(by: 2)
        #expect(try await f.s.server.purgeOnce() == 5, "the operation, its two members, its invite and its chat")
        #expect(try await f.get("op_messages?operation_id=eq.\(op)", as: m1).isEmpty)
        #expect(try await f.get("operations?id=eq.\(op)", as: ca).isEmpty)
        #expect(try await f.get("op_messages?operation_id=eq.\(open)", as: m1).count == 1, "an operation still running keeps everything")
        await f.s.stop()
    }
}

/// Chat media in Storage's `op-media` bucket: the operation's members upload and read under its folder,
/// nobody else; the purge takes the objects (rows and bytes) with the rest of the operation.
@Suite struct SurvaleMediaTests {
    @Test(arguments: TestStore.all) func mediaIsTheOperationsAndGoesWithIt(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store) {
            $0.tokenTTL = 30 * 86_400
            $0.retention = 7 * 86_400
        }
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let other = try await f.member("A1", callsign: "M-9"), outsider = try await f.member("B1", callsign: "B-1")
        let op = try await f.activeOperation(by: ca, with: [m1])
        let photo = Data(repeating: 0xAB, count: 300_000)
        let path = "/object/op-media/\(op)/photo-1.jpg"
        #expect(try await f.s.storage("POST", path, body: photo, contentType: "image/jpeg", token: .some(m1.token)).status == 200)
        for (who, token) in [("a teammate not in it", other.token), ("another agency", outsider.token)] {
            let refused = try await f.s.storage("POST", "/object/op-media/\(op)/x-\(who.count).jpg", body: photo, contentType: "image/jpeg",
                                                token: .some(token))
            #expect(refused.status != 200, "\(who) uploaded")
            #expect(try await f.s.storage("GET", "/object/authenticated/op-media/\(op)/photo-1.jpg", token: .some(token)).status != 200,
                    "\(who) downloaded")
        }
        let got = try await f.s.storage("GET", "/object/authenticated/op-media/\(op)/photo-1.jpg", token: .some(ca.token))
        #expect(got.status == 200 && got.body == photo)
        #expect(try await f.s.storage("POST", "/object/op-media/not-an-operation/a.jpg", body: photo, contentType: "image/jpeg",
                                      token: .some(m1.token)).status != 200)

        #expect(try await f.rpc("end_operation", ["operation_id": op], as: ca).status == 200)
        #expect(try await f.s.storage("POST", "/object/op-media/\(op)/late.jpg", body: photo, contentType: "image/jpeg",
                                      token: .some(m1.token)).status != 200, "nothing is added after the end")
        #expect(try await f.s.storage("GET", "/object/authenticated/op-media/\(op)/photo-1.jpg", token: .some(m1.token)).status == 200,
                "members keep reading it (replay)")
        f.s.clock.advance(by: 7 * 86_400 + 1)
        try await f.s.server.purgeOnce()
        #expect(try await f.s.storage("GET", "/object/authenticated/op-media/\(op)/photo-1.jpg").status != 200, "gone, even for the service role")
    }
}

extension SurvaleFixture {
    func request(_ method: String, _ path: String, _ body: [String: Any], as who: Member) async throws -> TestServer.Reply {
        try await s.request(method, "/rest/v1/\(path)", body: body, token: who.token)
    }
}

/// A signed-up user the agency never provisioned.
enum TestFixtureless {
    static func member(_ f: SurvaleFixture) async throws -> SurvaleFixture.Member {
        let user = try await f.s.signUp(withProfile: false)
        return SurvaleFixture.Member(id: user.id, token: user.token, callsign: "")
    }
}
