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

    /// An upsert's conflict target needs SELECT rights on PostgreSQL, as RETURNING does: the row must pass the SELECT
    /// policy before its constraints (a sender cannot read the location row it posts, so even `ON CONFLICT DO NOTHING`
    /// of one is 42501), and on the conflict's update path so must the existing row. Found by StoreDifferentialTests.
    @Test(arguments: TestStore.all) func anUpsertNeedsTheRowToBeReadable(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let row: [String: Any] = ["sender_id": a.id, "recipient_id": b.id]
        for prefer in ["return=minimal,resolution=ignore-duplicates", "return=minimal,resolution=merge-duplicates"] {
            let upsert = try await s.request("POST", "/rest/v1/encrypted_locations?on_conflict=id", body: [row], token: a.token, headers: ["Prefer": prefer])
            #expect(upsert.status == 403 && upsert.object["code"] as? String == "42501", "\(prefer): \(Self.text(upsert))")
        }
        // A plain insert reads nothing back: NOT NULL (the payload) is its error.
        let plain = try await s.request("POST", "/rest/v1/encrypted_locations", body: [row], token: a.token, headers: ["Prefer": "return=minimal"])
        #expect(plain.status == 400 && plain.object["code"] as? String == "23502", "\(Self.text(plain))")
        // Its own profile it reads: the upsert of it goes through, insert and update alike.
        for key in ["k1", "k2"] {
            let own = try await s.request("POST", "/rest/v1/users?on_conflict=id", body: [["id": a.id, "public_key": key]], token: a.token,
                                          headers: ["Prefer": "return=minimal,resolution=merge-duplicates"])
            #expect(own.status == 201, "\(Self.text(own))")
        }
        await s.stop()
    }

    /// PostgreSQL checks the caller's EXECUTE grant before it reads the arguments: anon calling `accept_invite` with a
    /// NUL in an argument is 401 42501, not 22P05; a signed-in user's call with it is 22P05. Found by StoreDifferentialTests.
    @Test(arguments: TestStore.all) func theGrantIsCheckedBeforeTheArguments(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp()
        let args: [String: Any] = ["code": NSNull(), "preference": "a\u{0}b"]
        let anon = try await s.request("POST", "/rest/v1/rpc/accept_invite", body: args, token: nil)
        #expect(anon.status == 401 && anon.object["code"] as? String == "42501", "\(Self.text(anon))")
        let user = try await s.request("POST", "/rest/v1/rpc/accept_invite", body: args, token: a.token)
        #expect(user.status == 400 && user.object["code"] as? String == "22P05", "\(Self.text(user))")
        await s.stop()
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
    /// Text with a NUL, which no PostgreSQL text can hold: a body's or an RPC argument's `\u0000` is 400 22P05, a filter's
    /// 0x00 is 400 22021 (SQLite stored the text cut at the NUL and answered 201). The same text without it is the control.
    @Test(arguments: TestStore.all) func textWithANULIsRefusedAsPostgreSQLRefusesIt(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(withProfile: false)
        let nul = try await s.request("POST", "/rest/v1/users", rawBody: Data(#"{"id":"\#(a.id)","public_key":"a\u0000b"}"#.utf8), token: a.token)
        #expect(nul.status == 400 && nul.code == "22P05", "\(Self.text(nul))")
        let control = try await s.request("POST", "/rest/v1/users", rawBody: Data(#"{"id":"\#(a.id)","public_key":"ab"}"#.utf8), token: a.token)
        #expect(control.status == 201, "\(Self.text(control))")
        let filtered = try await s.request("GET", "/rest/v1/users?public_key=eq.a%00b", token: a.token)
        #expect(filtered.status == 400 && filtered.code == "22021", "\(Self.text(filtered))")
        #expect(try await s.request("GET", "/rest/v1/users?public_key=eq.ab", token: a.token).rows.count == 1)
        await s.stop()

        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1")
        let named = try await f.rpc("create_operation", ["name": "a\u{0}b"], as: ca)
        #expect(named.status == 400 && named.code == "22P05", "\(Self.text(named))")
        // `trim` takes spaces only: a tab is a name, spaces alone are not.
        let tab = try await f.rpc("create_operation", ["name": "\t"], as: ca)
        #expect(tab.status == 200 && tab.object["name"] as? String == "\t", "\(Self.text(tab))")
        #expect(try await f.rpc("create_operation", ["name": "   "], as: ca).code == "22023")
        await f.s.stop()
    }

    /// Values read as `json_populate_recordset` reads them: a number's text into a text column, a decimal's text (white
    /// space, `Infinity`) into a double column, written back as PostgreSQL's `to_json` writes it; a boolean argument as
    /// `boolin` reads its text (a unique prefix, white space around it). NaN is the known difference (docs/server.md):
    /// SQLite keeps no NaN, so the embedded store refuses it where PostgreSQL stores it.
    @Test(arguments: TestStore.all) func valuesReadAsJSONPopulateRecordReadsThem(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1"), m1 = try await f.member("A1", callsign: "M-1")
        let op = try await f.activeOperation(by: ca, with: [])
        let point: [String: Any] = ["operation_id": op, "user_id": ca.id, "lat": " 46.05", "lon": "-0.12", "speed": "Infinity",
                                    "heading": "-inf", "recorded_at": "2026-11-25T12:00:00Z"]
        let stored = try await f.post("locations_archive", point, as: ca)
        #expect(stored.status == 201, "\(Self.text(stored))")
        let row = try #require(try await f.get("locations_archive?operation_id=eq.\(op)&speed=eq.Infinity", as: ca).first)
        #expect((row["lat"] as? NSNumber)?.doubleValue == 46.05 && row["speed"] as? String == "Infinity" && row["heading"] as? String == "-Infinity",
                "\(row)")
        let nan = try await f.post("locations_archive", point.merging(["speed": "NaN"]) { $1 }, as: ca)
        #expect(store == .sqlite ? nan.status == 400 && nan.code == "22P02" : nan.status == 201, "\(Self.text(nan))")
        let five = try await f.post("op_messages", ["operation_id": op, "sender_id": ca.id, "body": 5], as: ca)
        #expect(five.status == 201, "\(Self.text(five))")
        #expect(try await f.get("op_messages?operation_id=eq.\(op)&select=body", as: ca).compactMap { $0["body"] as? String } == ["5"])
        let invite = try await f.post("operation_invites", ["operation_id": op, "invitee_id": m1.id, "invited_by": ca.id], as: ca)
        let o = try await f.rpc("respond_to_invite", ["invite_id": try #require(invite.rows.first?["id"]), "accept": "o"], as: m1)
        #expect(o.status == 400 && o.code == "22P02", "\"o\" is both on and off: \(Self.text(o))")
        let declined = try await f.rpc("respond_to_invite", ["invite_id": try #require(invite.rows.first?["id"]), "accept": " fal\n"], as: m1)
        #expect(declined.status == 200 && declined.object["status"] as? String == "declined", "\(Self.text(declined))")
        await f.s.stop()
    }
    /// A call is matched against the function's parameters before anything runs, as PostgREST does: an argument it does
    /// not have, or one without a default left out, finds no function (404 PGRST202; SQLite ignored the one and answered
    /// 400 for the other). The same calls with their parameters are the controls.
    @Test(arguments: TestStore.all) func aCallIsMatchedToTheFunctionsParameters(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp()
        for (name, body) in [("create_invite", ["preference": "precise", "x": 1] as [String: Any]), ("accept_invite", ["preference": "general"])] {
            let r = try await s.request("POST", "/rest/v1/rpc/\(name)", body: body, token: a.token)
            #expect(r.status == 404 && r.code == "PGRST202", "\(name) \(body): \(Self.text(r))")
        }
        #expect(try await s.request("POST", "/rest/v1/rpc/create_invite", body: ["preference": "precise"], token: a.token).status == 200)
        await s.stop()

        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1")
        let op = try await f.activeOperation(by: ca, with: [])
        for (name, args) in [("create_operation", [String: Any]()), ("nearby_operations", ["lat": 51.5]),
                             ("start_operation", ["operation_id": op, "x": 1])] {
            let r = try await f.rpc(name, args, as: ca)
            #expect(r.status == 404 && r.code == "PGRST202", "\(name) \(args): \(Self.text(r))")
        }
        #expect(try await f.rpc("nearby_operations", ["lat": 51.5, "lon": -0.12], as: ca).status == 200)
        #expect(try await f.rpc("create_operation", ["name": "Harbor"], as: ca).status == 200)
        await f.s.stop()
    }
    /// Times as `timestamptz_in` reads them: a bare date is its midnight (UTC, the zone Supabase's sessions run in), and
    /// `now`, `today`… are words, in a body and in a filter (SQLite answered 400 22P02). `infinity` is the known
    /// difference (docs/server.md). An ISO time is the control.
    @Test(arguments: TestStore.all) func timesAreReadAsTimestamptzInReadsThem(store: TestStore) async throws {
        let f = try await SurvaleFixture.server(store)
        let ca = try await f.member("A1", callsign: "CA-1")
        let op = try await f.activeOperation(by: ca, with: [])
        for at in ["2026-01-01", " now ", "yesterday", "2026-11-25T12:00:00Z"] {
            let r = try await f.post("locations_archive", ["operation_id": op, "user_id": ca.id, "lat": 51.5, "lon": -0.12, "recorded_at": at], as: ca)
            #expect(r.status == 201, "\(at): \(Self.text(r))")
        }
        let dated = try await f.get("locations_archive?operation_id=eq.\(op)&recorded_at=lt.2026-01-02&select=recorded_at", as: ca)
        #expect(dated.compactMap { ($0["recorded_at"] as? String)?.prefix(19) } == ["2026-01-01T00:00:00"], "\(dated)")
        #expect(try await f.get("locations_archive?operation_id=eq.\(op)&recorded_at=gt.today", as: ca).count == 1, "now's row")
        #expect(try await f.get("locations_archive?operation_id=eq.\(op)&recorded_at=lt.tomorrow", as: ca).count == 4)
        let infinite = try await f.post("locations_archive", ["operation_id": op, "user_id": ca.id, "lat": 51.5, "lon": -0.12, "recorded_at": "infinity"],
                                        as: ca)
        #expect(store == .sqlite ? infinite.status == 400 && infinite.code == "22007" : infinite.status == 201, "\(Self.text(infinite))")
        let soon = try await f.post("locations_archive", ["operation_id": op, "user_id": ca.id, "lat": 51.5, "lon": -0.12, "recorded_at": "soon"], as: ca)
        #expect(soon.status == 400 && soon.code == "22007", "\(Self.text(soon))")
        await f.s.stop()
    }
}
