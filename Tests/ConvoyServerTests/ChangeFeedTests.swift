import Foundation
import Testing
@testable import ConvoyServer

/// Changes reach Realtime one way, whichever store and whoever wrote the rows:
/// an app's RPC writes rows like a REST request does, and the change feed
/// sends them only to subscribers whose bindings match and whose RLS lets
/// them read the row.
@Suite struct ChangeFeedTests {
    static var invitesAndFriendships: [[String: Any]] { [
        ["event": "*", "schema": "public", "table": "invites"],
        ["event": "*", "schema": "public", "table": "friendships"],
    ] }

    /// A `postgres_changes` frame for `table` and `type`.
    static func change(_ table: String, _ type: String) -> @Sendable ([String: Any]) -> Bool {
        { frame in
            let data = (frame["payload"] as? [String: Any])?["data"] as? [String: Any]
            return frame["event"] as? String == "postgres_changes" && data?["table"] as? String == table && data?["type"] as? String == type
        }
    }

    static func record(_ frame: [String: Any]) -> [String: Any] {
        ((frame["payload"] as? [String: Any])?["data"] as? [String: Any])?["record"] as? [String: Any] ?? [:]
    }

    @Test(arguments: TestStore.all) func anRPCsRowsReachRealtimeAsAnyWriteDoes(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp(), c = try await s.signUp()
        var clients: [PhoenixTestClient] = []
        for (user, topic) in [(a, "realtime:a"), (b, "realtime:b"), (c, "realtime:c")] {
            let client = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
            _ = try await client.join(topic, token: user.token, changes: Self.invitesAndFriendships)
            clients.append(client)
        }
        let (alice, bob, carol) = (clients[0], clients[1], clients[2])

        let invite = try await s.request("POST", "/rest/v1/rpc/create_invite", body: ["preference": "general"], token: a.token)
        let code = try #require(invite.object["code"] as? String)
        let invited = try await alice.next(Self.change("invites", "INSERT"))
        #expect(Self.record(invited)["code"] as? String == code && Self.record(invited)["inviter_id"] as? String == a.id)

        #expect(try await s.request("POST", "/rest/v1/rpc/accept_invite", body: ["code": code], token: b.token).status == 200)
        let accepted = try await alice.next(Self.change("invites", "UPDATE"))
        #expect(Self.record(accepted)["accepted_by"] as? String == b.id)
        for client in [alice, bob] {
            let friendship = Self.record(try await client.next(Self.change("friendships", "INSERT")))
            #expect(friendship["status"] as? String == "active" && friendship["user_id_1"] as? String == a.id
                        && friendship["user_id_2"] as? String == b.id)
        }
        // RLS: Bob never sees Alice's invite, Carol sees nothing of theirs.
        try await bob.sync()
        try await carol.sync()
        #expect(await bob.count("postgres_changes") == 0)
        #expect(await carol.count("postgres_changes") == 0)
        await s.stop()
    }

    /// `PATCH {}` names no column: PostgreSQL runs no UPDATE (PostgREST plans `SELECT … WHERE false`), so no rows come
    /// back and no change reaches Realtime. SQLite returned the rows and sent an UPDATE for each. The control: a PATCH
    /// with a column does both, on both stores.
    @Test(arguments: TestStore.all) func anEmptyPatchUpdatesNothingAndSendsNothing(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp()
        let client = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await client.join("realtime:users", token: a.token, changes: [["event": "UPDATE", "schema": "public", "table": "users"]])
        let prefer = ["Prefer": "return=representation"]
        let empty = try await s.request("PATCH", "/rest/v1/users?id=eq.\(a.id)", body: [String: Any](), token: a.token, headers: prefer)
        #expect(empty.status == 200 && (empty.json as? [Any])?.isEmpty == true, "\(store): \(String(decoding: empty.body, as: UTF8.self))")
        try await client.sync()
        #expect(await client.count("postgres_changes") == 0, "\(store)")
        let named = try await s.request("PATCH", "/rest/v1/users?id=eq.\(a.id)", body: ["full_name": "A"], token: a.token, headers: prefer)
        #expect(named.status == 200 && (named.json as? [Any])?.count == 1, "\(store)")
        #expect(Self.record(try await client.next(Self.change("users", "UPDATE")))["full_name"] as? String == "A")
        await s.stop()
    }

    /// Writes made at once (on SQLite one runs on its caller's thread, the others
    /// wait for the writer's queue) each commit and reach Realtime exactly once.
    @Test(arguments: TestStore.all) func concurrentWritesEachReachRealtimeOnce(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp()
        let alice = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await alice.join("realtime:a", token: a.token, changes: Self.invitesAndFriendships)
        let codes = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    let reply = try await s.request("POST", "/rest/v1/rpc/create_invite", body: ["preference": "general"], token: a.token)
                    return reply.object["code"] as? String
                }
            }
            var out: [String] = []
            for try await code in group { if let code { out.append(code) } }
            return out
        }
        #expect(codes.count == 40 && Set(codes).count == 40)
        var heard: [String] = []
        for _ in 0..<40 { heard.append(Self.record(try await alice.next(Self.change("invites", "INSERT")))["code"] as? String ?? "") }
        #expect(Set(heard) == Set(codes))
        try await alice.sync()
        #expect(await alice.count("postgres_changes") == 0, "no change twice")
        await s.stop()
    }

    /// The SQLite store's writes go to the feed after COMMIT, never on rollback:
    /// a bulk insert refused half way sends nothing.
    @Test func aRolledBackWriteSendsNothing() async throws {
        let s = try await TestServer()
        let a = try await s.signUp(), b = try await s.signUp()
        let bob = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await bob.join("realtime:b", token: b.token, changes: RealtimeTests.locations(b.id))
        let refused = try await s.request("POST", "/rest/v1/encrypted_locations", body: [
            ["sender_id": a.id, "recipient_id": b.id, "payload": "first"],
            ["sender_id": b.id, "recipient_id": b.id, "payload": "spoofed"],
        ], token: a.token)
        #expect(refused.status == 403)
        #expect(try await s.request("POST", "/rest/v1/encrypted_locations",
                                    body: ["sender_id": a.id, "recipient_id": b.id, "payload": "second"], token: a.token).status == 201)
        let first = try await bob.next(topic: "realtime:b", event: "postgres_changes")
        #expect(Self.record(first)["payload"] as? String == "second", "the refused batch's first row never went out")
        try await bob.sync()
        #expect(await bob.count("postgres_changes") == 0)
        await s.stop()
    }
}
