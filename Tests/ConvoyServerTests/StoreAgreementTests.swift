import Foundation
import Testing
@testable import ConvoyServer

/// Where the embedded store's checks are written by hand (RPCs, Realtime Authorization, how REST fills a bulk
/// insert), it answers as PostgreSQL does: each request here goes to both stores and must get PostgreSQL's answer.
/// Each case has its control beside it, the same request that does get through, so that a refusal is the rule's.
@Suite struct StoreAgreementTests {
    static func status(_ reply: [String: Any]) -> String? { SurvaleServerTests.status(reply) }

    static func text(_ r: TestServer.Reply) -> String { "\(r.status) \(String(decoding: r.body, as: UTF8.self))" }

    /// A pair's direct channel is written with broadcasts only (`survale_direct_write`: `extension = 'broadcast'`): a
    /// presence track there is refused, where the same track on the operation's channel is allowed.
    @Test(arguments: TestStore.all) func aPairsChannelTakesBroadcastsNotPresence(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let op = try await f.activeOperation(by: ca, with: [m1])
        let (lo, hi) = ca.id < m1.id ? (ca.id, m1.id) : (m1.id, ca.id)
        let direct = "realtime:op_\(op)_dm_\(lo)_\(hi)", team = "realtime:op_\(op)_locations"
        let one = try await PhoenixTestClient(url: f.s.keys.url, apikey: f.s.keys.anonKey)
        #expect(Self.status(try await one.join(direct, token: m1.token, ack: true, presenceKey: m1.id, isPrivate: true)) == "ok")
        #expect(Self.status(try await one.join(team, token: m1.token, ack: true, presenceKey: m1.id, isPrivate: true)) == "ok")
        let onTeam = one.send(team, "presence", ["type": "presence", "event": "track", "payload": ["callsign": "M-1"]])
        #expect(Self.status(try await one.reply(to: onTeam)) == "ok", "the control: presence on the operation's channel")
        let onPair = one.send(direct, "presence", ["type": "presence", "event": "track", "payload": ["callsign": "M-1"]])
        #expect(Self.status(try await one.reply(to: onPair)) == "error", "a presence track on a pair's channel")
        let sent = one.send(direct, "broadcast", ["type": "broadcast", "event": "dm", "payload": ["text": "ok"]])
        #expect(Self.status(try await one.reply(to: sent)) == "ok", "a broadcast on it still goes")
        await f.s.stop()
    }

    /// A JSON null is SQL NULL, not an absent argument: `accept boolean DEFAULT true` given null declines
    /// (`CASE WHEN NULL` takes the ELSE, `IF NULL` makes no member), `approve` given null denies. Absent, both are true.
    @Test(arguments: TestStore.all) func aNullFlagIsNotItsDefault(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let m2 = try await f.member("A1", callsign: "M-2"), m3 = try await f.member("A1", callsign: "M-3")
        let op = try await f.activeOperation(by: ca, with: [])
        var invites: [Any] = []
        for m in [m1, m2] {
            let invite = try await f.post("operation_invites", ["operation_id": op, "invitee_id": m.id, "invited_by": ca.id], as: ca)
            invites.append(try #require(invite.rows.first?["id"]))
        }
        let declined = try await f.rpc("respond_to_invite", ["invite_id": invites[0], "accept": NSNull()], as: m1)
        #expect(declined.status == 200 && declined.object["status"] as? String == "declined", "\(Self.text(declined))")
        let accepted = try await f.rpc("respond_to_invite", ["invite_id": invites[1]], as: m2)
        #expect(accepted.status == 200 && accepted.object["status"] as? String == "accepted", "\(Self.text(accepted))")
        let members = Set(try await f.get("operation_members?operation_id=eq.\(op)&left_at=is.null&select=user_id", as: ca).compactMap { $0["user_id"] as? String })
        #expect(members == [ca.id, m2.id], "null made no member; absent (DEFAULT true) did")

        var requests: [Any] = []
        for m in [m1, m3] {
            let asked = try await f.post("join_requests", ["operation_id": op, "requester_id": m.id], as: m)
            requests.append(try #require(asked.rows.first?["id"], "\(Self.text(asked))"))
        }
        let denied = try await f.rpc("decide_join_request", ["request_id": requests[0], "approve": NSNull()], as: ca)
        #expect(denied.status == 200 && denied.object["status"] as? String == "denied", "\(Self.text(denied))")
        let approved = try await f.rpc("decide_join_request", ["request_id": requests[1]], as: ca)
        #expect(approved.status == 200 && approved.object["status"] as? String == "approved", "\(Self.text(approved))")
        let now = Set(try await f.get("operation_members?operation_id=eq.\(op)&left_at=is.null&select=user_id", as: ca).compactMap { $0["user_id"] as? String })
        #expect(now == [ca.id, m2.id, m3.id], "null let nobody in; absent did")

        // A null id matches no row: "not yours" (42501), never a 400 about its syntax.
        #expect(try await f.rpc("start_operation", ["operation_id": NSNull()], as: ca).status == 403)
        #expect(try await f.rpc("respond_to_invite", ["invite_id": NSNull()], as: m1).status == 403)
        #expect(try await f.rpc("decide_join_request", ["request_id": NSNull()], as: ca).status == 403)
        #expect(try await f.rpc("leave_operation", ["operation_id": NSNull()], as: m2).status == 403)
        await f.s.stop()
    }

    /// `nearby_operations` with a null among its numbers compares every distance with NULL: no marker, where the same
    /// call without `radius_m` (its DEFAULT 5000) finds the other agency's operation.
    @Test(arguments: TestStore.all) func aNullRadiusFindsNothing(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1"), outsider = try await f.member("B1", callsign: "B-1")
        let op = try await f.activeOperation(by: ca, with: [])
        #expect(try await f.post("staging_areas", ["operation_id": op, "label": "Lot 4", "lat": 51.5012, "lon": -0.1201], as: ca).status == 201)
        let control = try await f.rpc("nearby_operations", ["lat": 51.51, "lon": -0.12], as: outsider)
        #expect((control.json as? [Any])?.count == 1, "the control: \(Self.text(control))")
        for args: [String: Any] in [["lat": 51.51, "lon": -0.12, "radius_m": NSNull()], ["lat": NSNull(), "lon": -0.12, "radius_m": 5000],
                                     ["lat": 51.51, "lon": NSNull()]] {
            let r = try await f.rpc("nearby_operations", args, as: outsider)
            #expect(r.status == 200 && (r.json as? [Any])?.isEmpty == true, "\(args): \(Self.text(r))")
        }
        await f.s.stop()
    }

    /// Arguments read as PostgreSQL reads their text: a uuid in braces or without hyphens, a name kept as given.
    @Test(arguments: TestStore.all) func argumentsReadAsPostgreSQLReadsThem(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1")
        let created = try await f.rpc("create_operation", ["name": "  Harbor  ", "incident_number": 2417], as: ca)
        #expect(created.object["name"] as? String == "  Harbor  " && created.object["incident_number"] as? String == "2417", "\(Self.text(created))")
        let op = try #require(created.object["id"] as? String)
        let bare = op.replacingOccurrences(of: "-", with: "").uppercased()
        let started = try await f.rpc("start_operation", ["operation_id": "{\(bare)}"], as: ca)
        #expect(started.status == 200 && started.object["id"] as? String == op, "\(Self.text(started))")
        #expect(try await f.rpc("end_operation", ["operation_id": "\(op)-"], as: ca).status == 400, "a trailing hyphen is not a uuid")
        #expect(try await f.rpc("end_operation", ["operation_id": bare], as: ca).status == 200)
        await f.s.stop()
    }

    /// A bulk insert inserts the union of its objects' keys (PostgREST): a key one object lacks is NULL for it, and
    /// the policy or NOT NULL refuses what that makes; with `Prefer: missing=default` it is the column's default.
    @Test(arguments: TestStore.all) func aBulkInsertsMissingKeyIsNullUnlessAskedForTheDefault(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp(), c = try await s.signUp()
        let rows: [[String: Any]] = [["user_id_1": a.id, "user_id_2": b.id, "requested_by": a.id, "status": "pending"],
                                     ["user_id_1": a.id, "user_id_2": c.id, "requested_by": a.id]]
        let refused = try await s.request("POST", "/rest/v1/friendships", body: rows, token: a.token)
        #expect(refused.status == 403 && refused.object["code"] as? String == "42501", "status NULL fails the policy: \(Self.text(refused))")
        #expect(try await s.request("GET", "/rest/v1/friendships", token: a.token).rows.isEmpty, "all or nothing")
        let filled = try await s.request("POST", "/rest/v1/friendships", body: rows, token: a.token,
                                         headers: ["Prefer": "return=representation, missing=default"])
        #expect(filled.status == 201 && filled.rows.map { $0["status"] as? String } == ["pending", "pending"], "\(Self.text(filled))")
        await s.stop()

        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1")
        let op = try await f.activeOperation(by: ca, with: [])
        let lines: [[String: Any]] = [["operation_id": op, "sender_id": ca.id, "body": "on scene"], ["operation_id": op, "sender_id": ca.id]]
        let notNull = try await f.s.request("POST", "/rest/v1/op_messages", body: lines, token: ca.token)
        #expect(notNull.status == 400 && notNull.object["code"] as? String == "23502", "body NULL: \(Self.text(notNull))")
        let defaulted = try await f.s.request("POST", "/rest/v1/op_messages", body: lines, token: ca.token,
                                              headers: ["Prefer": "return=representation,missing=default"])
        #expect(defaulted.status == 201 && defaulted.rows.map { $0["body"] as? String } == ["on scene", ""], "\(Self.text(defaulted))")
        // One object, or objects with the same keys: nothing is missing, with or without the preference.
        let same = try await f.s.request("POST", "/rest/v1/op_messages", body: [lines[0], lines[0]], token: ca.token)
        #expect(same.status == 201, "\(Self.text(same))")
        await f.s.stop()
    }

    /// Green Box's invite RPCs: a text argument given as another JSON scalar is its text (`preference: 5` is "5", refused
    /// as PostgreSQL refuses it), null is `coalesce`d to precise, and a null code is one more code that matches nothing.
    @Test(arguments: TestStore.all) func inviteArgumentsReadAsTheSQLReadsThem(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let five = try await s.request("POST", "/rest/v1/rpc/create_invite", body: ["preference": 5], token: a.token)
        #expect(five.status == 400 && five.code == "22023", "\(Self.text(five))")
        let null = try await s.request("POST", "/rest/v1/rpc/create_invite", body: ["preference": NSNull()], token: a.token)
        #expect(null.status == 200, "\(Self.text(null))")
        let code = try #require(null.object["code"] as? String)
        let unknown = try await s.request("POST", "/rest/v1/rpc/accept_invite", body: ["code": "ZZZZZZZZ"], token: b.token)
        let nullCode = try await s.request("POST", "/rest/v1/rpc/accept_invite", body: ["code": NSNull()], token: b.token)
        #expect(nullCode.status == 400 && nullCode.code == "P0001" && nullCode.object["message"] as? String == unknown.object["message"] as? String,
                "\(Self.text(nullCode))")
        let accepted = try await s.request("POST", "/rest/v1/rpc/accept_invite", body: ["code": code, "preference": NSNull()], token: b.token)
        #expect(accepted.status == 200 && accepted.object["preference_1"] as? String == "precise" && accepted.object["preference_2"] as? String == "precise",
                "\(Self.text(accepted))")
        await s.stop()
    }
}
