@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

/// The RLS matrix: for every policy, an allowed case and each denied case,
/// against both stores (SQLite: Swift policies; PostgreSQL: its own RLS).
@Suite struct PolicyTests {
    @Test(arguments: TestStore.all) func usersReadableByAnyUserWritableOnlyByTheirOwner(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let all = try await s.request("GET", "/rest/v1/users?select=id,public_key", token: a.token)
        #expect(Set(all.rows.map { $0["id"] as! String }) == [a.id, b.id])
        #expect(try await s.request("GET", "/rest/v1/users").rows.isEmpty, "anon sees no users")

        // Own row: update allowed. Another's row (key substitution): invisible, nothing changes.
        let own = try await s.request("PATCH", "/rest/v1/users?id=eq.\(a.id)", body: ["public_key": "new-a"], token: a.token,
                                      headers: ["Prefer": "return=representation"])
        #expect(own.status == 200 && own.rows.first?["public_key"] as? String == "new-a")
        let theirs = try await s.request("PATCH", "/rest/v1/users?id=eq.\(b.id)", body: ["public_key": "attacker"], token: a.token,
                                         headers: ["Prefer": "return=representation"])
        #expect(theirs.status == 200 && theirs.rows.isEmpty)
        let bRow = try await s.request("GET", "/rest/v1/users?id=eq.\(b.id)", token: b.token)
        #expect(bRow.rows.first?["public_key"] as? String != "attacker")
        // Moving one's own row to another id fails the check.
        let move = try await s.request("PATCH", "/rest/v1/users?id=eq.\(a.id)", body: ["id": b.id], token: a.token)
        #expect(move.status == 403 && move.code == "42501")
        // Inserting a row for someone else.
        let c = try await s.signUp(withProfile: false)
        let forOther = try await s.request("POST", "/rest/v1/users", body: ["id": c.id, "public_key": "x"], token: a.token)
        #expect(forOther.status == 403 && forOther.code == "42501")
        #expect(try await s.request("POST", "/rest/v1/users", body: ["id": c.id, "public_key": "x"]).status == 401, "anon: 401")
        // Nobody deletes users through REST.
        #expect(try await s.request("DELETE", "/rest/v1/users?id=eq.\(a.id)", token: a.token, headers: ["Prefer": "return=representation"]).rows.isEmpty)
        await s.stop()
    }

    @Test(arguments: TestStore.all) func friendshipsFollowTheInviteRules(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp(), c = try await s.signUp()
        let pending: [String: Any] = ["user_id_1": a.id, "user_id_2": b.id, "requested_by": a.id, "preference_1": "precise"]
        let made = try await s.request("POST", "/rest/v1/friendships", body: pending, token: a.token, headers: ["Prefer": "return=representation"])
        #expect(made.status == 201 && made.rows.first?["status"] as? String == "pending")
        let id = made.rows.first!["id"] as! Int

        // Denied inserts: requested by someone else, born active, not a member.
        for body: [String: Any] in [
            ["user_id_1": a.id, "user_id_2": b.id, "requested_by": b.id],
            ["user_id_1": a.id, "user_id_2": c.id, "requested_by": a.id, "status": "active"],
            ["user_id_1": b.id, "user_id_2": c.id, "requested_by": a.id],
        ] {
            let r = try await s.request("POST", "/rest/v1/friendships", body: body, token: a.token)
            #expect(r.status == 403 && r.code == "42501", "\(body)")
        }
        // Only members see it.
        #expect(try await s.request("GET", "/rest/v1/friendships", token: b.token).rows.count == 1)
        #expect(try await s.request("GET", "/rest/v1/friendships", token: c.token).rows.isEmpty)
        // The requester cannot activate; an outsider cannot touch it; the invitee can.
        let selfAccept = try await s.request("PATCH", "/rest/v1/friendships?id=eq.\(id)", body: ["status": "active"], token: a.token)
        #expect(selfAccept.status == 403)
        let outsider = try await s.request("PATCH", "/rest/v1/friendships?id=eq.\(id)", body: ["status": "active"], token: c.token,
                                           headers: ["Prefer": "return=representation"])
        #expect(outsider.rows.isEmpty)
        let otherPreference = try await s.request("PATCH", "/rest/v1/friendships?id=eq.\(id)", body: ["preference_1": "general"], token: b.token)
        #expect(otherPreference.status == 403, "b may set only preference_2")
        let accept = try await s.request("PATCH", "/rest/v1/friendships?id=eq.\(id)", body: ["status": "active", "preference_2": "general"],
                                         token: b.token, headers: ["Prefer": "return=representation"])
        #expect(accept.status == 200 && accept.rows.first?["status"] as? String == "active")
        #expect(accept.rows.first?["preference_1"] as? String == "precise" && accept.rows.first?["preference_2"] as? String == "general")
        let swap = try await s.request("PATCH", "/rest/v1/friendships?id=eq.\(id)", body: ["user_id_2": c.id], token: a.token)
        #expect(swap.status == 403, "members are fixed")
        // Unfriending: a member can, an outsider cannot.
        #expect(try await s.request("DELETE", "/rest/v1/friendships?id=eq.\(id)", token: c.token, headers: ["Prefer": "return=representation"]).rows.isEmpty)
        #expect(try await s.request("DELETE", "/rest/v1/friendships?id=eq.\(id)", token: b.token, headers: ["Prefer": "return=representation"]).rows.count == 1)
        await s.stop()
    }

    @Test(arguments: TestStore.all) func locationsAreWrittenAsOneselfAndReadOnlyByTheRecipient(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp(), c = try await s.signUp()
        let ok = try await s.request("POST", "/rest/v1/encrypted_locations",
                                     body: [["sender_id": a.id, "recipient_id": b.id, "payload": "p1"],
                                            ["sender_id": a.id, "recipient_id": c.id, "payload": "p2"]], token: a.token)
        #expect(ok.status == 201 && ok.body.isEmpty)
        let spoof = try await s.request("POST", "/rest/v1/encrypted_locations",
                                        body: ["sender_id": b.id, "recipient_id": c.id, "payload": "forged"], token: a.token)
        #expect(spoof.status == 403 && spoof.code == "42501")
        #expect((spoof.object["message"] as? String) == "new row violates row-level security policy for table \"encrypted_locations\"")
        // A bulk insert with one bad row inserts nothing.
        let mixed = try await s.request("POST", "/rest/v1/encrypted_locations",
                                        body: [["sender_id": a.id, "recipient_id": b.id, "payload": "ok"],
                                               ["sender_id": c.id, "recipient_id": b.id, "payload": "forged"]], token: a.token)
        #expect(mixed.status == 403)
        #expect(try await s.request("GET", "/rest/v1/encrypted_locations", token: b.token).rows.map { $0["payload"] as! String } == ["p1"])
        #expect(try await s.request("GET", "/rest/v1/encrypted_locations?recipient_id=eq.\(b.id)", token: c.token).rows.isEmpty)
        #expect(try await s.request("GET", "/rest/v1/encrypted_locations", token: a.token).rows.isEmpty, "senders cannot read back")
        #expect(try await s.request("GET", "/rest/v1/encrypted_locations").rows.isEmpty)
        // Nobody but the purge deletes or edits them.
        #expect(try await s.request("DELETE", "/rest/v1/encrypted_locations?recipient_id=eq.\(b.id)", token: b.token,
                                    headers: ["Prefer": "return=representation"]).rows.isEmpty)
        // No UPDATE policy: as in PostgreSQL, the update sees no rows and changes nothing.
        let edit = try await s.request("PATCH", "/rest/v1/encrypted_locations?id=gt.0", body: ["payload": "x"], token: b.token)
        #expect(edit.status == 204)
        #expect(try await s.request("GET", "/rest/v1/encrypted_locations", token: b.token).rows.map { $0["payload"] as! String } == ["p1"])
        #expect(try await s.request("GET", "/rest/v1/encrypted_locations", token: s.keys.serviceRoleKey,
                                    apikey: .some(s.keys.serviceRoleKey)).rows.count == 2, "the service role sees all")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func strictPoliciesAllowOnlyActiveFriends(store: TestStore) async throws {
        let s = try await TestServer(store: store) { $0.strictPolicies = true }
        let a = try await s.signUp(), b = try await s.signUp(), c = try await s.signUp()
        let invite = try await s.request("POST", "/rest/v1/rpc/create_invite", body: ["preference": "precise"], token: a.token)
        _ = try await s.request("POST", "/rest/v1/rpc/accept_invite", body: ["code": invite.object["code"]!, "preference": "general"], token: b.token)
        let toFriend = try await s.request("POST", "/rest/v1/encrypted_locations", body: ["sender_id": a.id, "recipient_id": b.id, "payload": "p"], token: a.token)
        #expect(toFriend.status == 201)
        let toStranger = try await s.request("POST", "/rest/v1/encrypted_locations", body: ["sender_id": a.id, "recipient_id": c.id, "payload": "p"], token: a.token)
        #expect(toStranger.status == 403 && toStranger.code == "42501")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func invitesCreateAcceptAndFailUniformly(store: TestStore) async throws {
        let s = try await TestServer(store: store) { $0.inviteTTL = 300 }
        let a = try await s.signUp(), b = try await s.signUp(), c = try await s.signUp()
        let made = try await s.request("POST", "/rest/v1/rpc/create_invite", body: ["preference": "general"], token: a.token)
        #expect(made.status == 200)
        let code = try #require(made.object["code"] as? String)
        #expect(code.count == 8 && made.object["expires_at"] is String)
        #expect(try await s.request("POST", "/rest/v1/rpc/accept_invite", body: ["code": code], token: a.token).status == 400, "not your own")
        let accepted = try await s.request("POST", "/rest/v1/rpc/accept_invite", body: ["code": code.lowercased(), "preference": "precise"], token: b.token)
        #expect(accepted.status == 200 && accepted.object["status"] as? String == "active")
        #expect(accepted.object["user_id_1"] as? String == a.id && accepted.object["preference_1"] as? String == "general")
        #expect(accepted.object["user_id_2"] as? String == b.id && accepted.object["preference_2"] as? String == "precise")
        // Used, unknown and expired codes: one answer.
        let later = try await s.request("POST", "/rest/v1/rpc/create_invite", body: [String: Any](), token: a.token)
        s.clock.advance(by: 301)
        var messages = Set<String>()
        for bad in [code, "ZZZZZZZZ", later.object["code"] as! String] {
            let r = try await s.request("POST", "/rest/v1/rpc/accept_invite", body: ["code": bad], token: c.token)
            #expect(r.status == 400 && r.code == "P0001")
            messages.insert(r.object["message"] as? String ?? "")
        }
        #expect(messages.count == 1)
        // Invites are visible to their inviter only; RPCs need a user.
        #expect(try await s.request("GET", "/rest/v1/invites", token: a.token).rows.count == 2)
        #expect(try await s.request("GET", "/rest/v1/invites", token: b.token).rows.isEmpty)
        #expect(try await s.request("POST", "/rest/v1/rpc/create_invite", body: [String: Any]()).status == 401)
        #expect(try await s.request("POST", "/rest/v1/rpc/create_invite", body: ["preference": "exact"], token: a.token).status == 400)
        #expect(try await s.request("POST", "/rest/v1/rpc/drop_everything", body: [String: Any](), token: a.token).status == 404)
        await s.stop()
    }
}
