@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

@Suite struct RealtimeTests {
    static func locations(_ recipient: String) -> [[String: Any]] {
        [["event": "INSERT", "schema": "public", "table": "encrypted_locations", "filter": "recipient_id=eq.\(recipient)"]]
    }

    @Test(arguments: TestStore.all) func joinEchoesBindingsAndDeliversInsertsToTheRecipientOnly(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp(), c = try await s.signUp()
        let bob = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        let join = try await bob.join("realtime:locations-b", token: b.token, changes: Self.locations(b.id))
        let response = join["payload"] as? [String: Any]
        #expect(response?["status"] as? String == "ok")
        let echoed = try #require(((response?["response"] as? [String: Any])?["postgres_changes"] as? [[String: Any]])?.first)
        #expect(echoed["table"] as? String == "encrypted_locations" && echoed["filter"] as? String == "recipient_id=eq.\(b.id)")
        #expect(echoed["event"] as? String == "INSERT" && echoed["schema"] as? String == "public")
        let bindingID = try #require(echoed["id"] as? Int)
        let system = try await bob.next(topic: "realtime:locations-b", event: "system")
        #expect((system["payload"] as? [String: Any])?["message"] as? String == "Subscribed to PostgreSQL")

        // Carol asks for Bob's rows: the join succeeds, RLS delivers nothing.
        let carol = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        #expect((try await carol.join("realtime:spy", token: c.token, changes: Self.locations(b.id))["payload"] as? [String: Any])?["status"] as? String == "ok")

        let post = try await s.request("POST", "/rest/v1/encrypted_locations",
                                       body: ["sender_id": a.id, "recipient_id": b.id, "payload": "sealed-bytes"], token: a.token)
        #expect(post.status == 201)
        let change = try await bob.next(topic: "realtime:locations-b", event: "postgres_changes")
        let payload = try #require(change["payload"] as? [String: Any])
        #expect(payload["ids"] as? [Int] == [bindingID])
        let data = try #require(payload["data"] as? [String: Any])
        #expect(data["type"] as? String == "INSERT" && data["table"] as? String == "encrypted_locations" && data["schema"] as? String == "public")
        #expect(data["commit_timestamp"] is String && data["errors"] is NSNull)
        #expect((data["columns"] as? [[String: String]])?.contains { $0["name"] == "payload" && $0["type"] == "text" } == true)
        let record = try #require(data["record"] as? [String: Any])
        #expect(record["payload"] as? String == "sealed-bytes" && record["sender_id"] as? String == a.id && record["id"] is Int)

        try await carol.sync()
        #expect(await carol.count("postgres_changes") == 0)
        await s.stop()
    }

    @Test(arguments: TestStore.all) func heartbeatTokenExpiryAndRefresh(store: TestStore) async throws {
        let s = try await TestServer(store: store) { $0.tokenTTL = 60 }
        let b = try await s.signUp()
        let client = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await client.join("realtime:one", token: b.token, changes: Self.locations(b.id))
        _ = try await client.join("realtime:two", token: b.token, changes: Self.locations(b.id))
        try await client.sync()

        // A fresh token on "two" keeps it open; "one" expires and is closed with Supabase's text.
        s.clock.advance(by: 30)
        let fresh = try await s.request("POST", "/auth/v1/token?grant_type=refresh_token", body: ["refresh_token": b.refresh])
        client.send("realtime:two", "access_token", ["access_token": fresh.object["access_token"] as! String])
        s.clock.advance(by: 31)
        try await client.sync()
        let expired = try await client.next {
            $0["topic"] as? String == "realtime:one" && $0["event"] as? String == "system"
                && ($0["payload"] as? [String: Any])?["status"] as? String == "error"
        }
        #expect(((expired["payload"] as? [String: Any])?["message"] as? String)?.hasPrefix("Token has expired") == true)
        _ = try await client.next(topic: "realtime:one", event: "phx_close")
        #expect(await client.inbox.all().allSatisfy { !$0.contains("\"realtime:two\"") || !$0.contains("phx_close") })

        // A join with an expired token is refused.
        let late = try await client.join("realtime:three", token: b.token)
        let reason = ((late["payload"] as? [String: Any])?["response"] as? [String: Any])?["reason"] as? String
        #expect(reason?.hasPrefix("InvalidJWTToken") == true)
        // A bad token pushed to a channel closes it.
        client.send("realtime:two", "access_token", ["access_token": "garbage"])
        _ = try await client.next(topic: "realtime:two", event: "phx_close")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func broadcastAndPresenceBetweenClients(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let one = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        let two = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await one.join("realtime:op_7_locations", token: a.token, ack: true, presenceKey: a.id)
        _ = try await two.join("realtime:op_7_locations", token: b.token, presenceKey: b.id)

        let ref = one.send("realtime:op_7_locations", "broadcast", ["type": "broadcast", "event": "pos", "payload": ["lat": 1.5]])
        _ = try await one.reply(to: ref)  // ack: true
        let got = try await two.next(topic: "realtime:op_7_locations", event: "broadcast")
        #expect((got["payload"] as? [String: Any])?["event"] as? String == "pos")
        try await one.sync()
        #expect(await one.count("broadcast") == 0, "self: false")

        one.send("realtime:op_7_locations", "presence", ["type": "presence", "event": "track", "payload": ["online_at": "now"]])
        let diff = try await two.next(topic: "realtime:op_7_locations", event: "presence_diff")
        #expect(((diff["payload"] as? [String: Any])?["joins"] as? [String: Any])?[a.id] != nil)
        one.send("realtime:op_7_locations", "phx_leave")
        let leave = try await two.next(topic: "realtime:op_7_locations", event: "presence_diff")
        #expect(((leave["payload"] as? [String: Any])?["leaves"] as? [String: Any])?[a.id] != nil)
        await s.stop()
    }

    @Test(arguments: TestStore.all) func joinLimitsAndErrors(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let b = try await s.signUp()
        let client = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        for i in 0..<RealtimeHub.maxChannels {
            client.send("realtime:c\(i)", "phx_join", ["config": [String: Any](), "access_token": b.token])
        }
        try await client.sync()
        let over = try await client.join("realtime:one-too-many", token: b.token)
        #expect(((over["payload"] as? [String: Any])?["response"] as? [String: Any])?["reason"] as? String == "ChannelRateLimitReached: Too many channels (100 per connection)")
        let badTable = try await client.join("realtime:c1", token: b.token,
                                             changes: [["event": "INSERT", "schema": "public", "table": "secrets"]])
        #expect((badTable["payload"] as? [String: Any])?["status"] as? String == "error")
        let forged = try await client.join("realtime:c2", token: "x.y.z")
        #expect((((forged["payload"] as? [String: Any])?["response"] as? [String: Any])?["reason"] as? String)?.hasPrefix("InvalidJWTToken") == true)
        await s.stop()
    }
}
