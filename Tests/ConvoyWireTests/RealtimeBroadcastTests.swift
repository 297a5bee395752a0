import ConvoyJSON
import ConvoyServer
import ConvoyWire
import Foundation
import Testing

/// The Realtime client's broadcast and presence, and its private joins,
/// against `convoy serve`.
@Suite struct RealtimeBroadcastTests {
    typealias Event = RealtimeClient.Event

    @Test func broadcastWithAckAndPresenceStateAndDiff() async throws {
        let server = try await HTTPEngineTests.server()
        let keys = server.keys
        let engine = try HTTPEngine()
        let target = SupabaseTarget(url: keys.url, anonKey: keys.anonKey)
        let auth = SupabaseAuth(SupabaseHTTP(engine: engine, target: target, connection: try HTTPConnection(engine: engine)))
        let alice = try await auth.signUp(email: "alice@example.com", password: "secret123")
        let bob = try await auth.signUp(email: "bob@example.com", password: "secret123")
        let topic = "realtime:op_9_locations"

        let a = RealtimeClient(url: target.realtimeURL, accessToken: alice.accessToken)
        let b = RealtimeClient(url: target.realtimeURL, accessToken: bob.accessToken)
        let running = [Task { await a.run() }, Task { await b.run() }]
        var aEvents = a.events.makeAsyncIterator(), bEvents = b.events.makeAsyncIterator()
        #expect(a.broadcast(topic, event: "pos", payload: [:]) == nil, "nothing is sent before the channel is joined")
        b.join(topic, options: .init(presenceKey: bob.userID))
        _ = try await SupabaseClientsTests.next(&bEvents) { if case .subscribed(let t) = $0 { t } else { nil } }
        a.join(topic, options: .init(broadcastAck: true, presenceKey: alice.userID))
        // Made while the join is on its way: it waits for the join and goes out then (realtime-js's push buffer).
        let early = try #require(a.broadcast(topic, event: "pos", payload: ["seq": 1]))
        _ = try await SupabaseClientsTests.next(&aEvents) { if case .subscribed(let t) = $0 { t } else { nil } }
        #expect(a.isJoined(topic))
        let first = try await SupabaseClientsTests.next(&bEvents) { if case .broadcast(_, let m) = $0 { m } else { nil } }
        #expect(first.payload["seq"] == "1" && first.json == #"{"seq":1}"#)
        _ = try await SupabaseClientsTests.next(&aEvents) { if case .pushReply(_, let r, "ok", _) = $0, r == early { r } else { nil } }

        let ref = try #require(a.broadcast(topic, event: "pos", payload: ["lat": 51.5, "seq": 7, "who": .string(alice.userID)]))
        let ack = try await SupabaseClientsTests.next(&aEvents) { if case .pushReply(_, let r, let status, _) = $0, r == ref { status } else { nil } }
        #expect(ack == "ok")
        let got = try await SupabaseClientsTests.next(&bEvents) { if case .broadcast(_, let m) = $0 { m } else { nil } }
        #expect(got.event == "pos" && got.payload["lat"] == "51.5" && got.payload["seq"] == "7" && got.payload["who"] == alice.userID)
        #expect(got.bytes > 0 && got.receivedAt > 0)

        let tracked = try #require(a.track(topic, meta: ["callsign": "A1"]))
        _ = try await SupabaseClientsTests.next(&aEvents) { if case .pushReply(_, let r, "ok", _) = $0, r == tracked { r } else { nil } }
        let joins = try await SupabaseClientsTests.next(&bEvents) { if case .presence(_, .diff(let joins, _, _)) = $0, !joins.isEmpty { joins } else { nil } }
        #expect(joins[alice.userID]?.first?["callsign"] == "A1")
        a.untrack(topic)
        let leaves = try await SupabaseClientsTests.next(&bEvents) { if case .presence(_, .diff(_, let leaves, _)) = $0, !leaves.isEmpty { leaves } else { nil } }
        #expect(leaves[alice.userID] != nil)

        // A third client joining late gets the state: Bob is not tracked, so it is empty; Alice tracks again and it is not.
        a.track(topic, meta: ["callsign": "A1"])
        _ = try await SupabaseClientsTests.next(&bEvents) { if case .presence(_, .diff(let joins, _, _)) = $0, !joins.isEmpty { joins } else { nil } }
        let c = RealtimeClient(url: target.realtimeURL, accessToken: bob.accessToken)
        let third = Task { await c.run() }
        var cEvents = c.events.makeAsyncIterator()
        c.join(topic)
        let state = try await SupabaseClientsTests.next(&cEvents) { if case .presence(_, .state(let s, _)) = $0 { s } else { nil } }
        #expect(state.keys.sorted() == [alice.userID])
        for t in running + [third] { t.cancel() }
        await server.stop()
    }

    @Test func privateJoinsAreRefusedWithoutAPolicyAndTakenFromTheServiceRole() async throws {
        let server = try await HTTPEngineTests.server()
        let keys = server.keys
        let engine = try HTTPEngine()
        let target = SupabaseTarget(url: keys.url, anonKey: keys.anonKey)
        let auth = SupabaseAuth(SupabaseHTTP(engine: engine, target: target, connection: try HTTPConnection(engine: engine)))
        let alice = try await auth.signUp(email: "alice@example.com", password: "secret123")
        let user = RealtimeClient(url: target.realtimeURL, accessToken: alice.accessToken)
        let service = RealtimeClient(url: target.realtimeURL, accessToken: keys.serviceRoleKey)
        let running = [Task { await user.run() }, Task { await service.run() }]
        var userEvents = user.events.makeAsyncIterator(), serviceEvents = service.events.makeAsyncIterator()
        user.join("realtime:op_1_locations", options: .init(isPrivate: true))
        let reason = try await SupabaseClientsTests.next(&userEvents) { if case .joinFailed(_, let r) = $0 { r } else { nil } }
        #expect(reason == "Unauthorized: You do not have permissions to read from this Channel topic: op_1_locations")
        #expect(!user.isJoined("realtime:op_1_locations"))
        service.join("realtime:op_1_locations", options: .init(isPrivate: true))
        _ = try await SupabaseClientsTests.next(&serviceEvents) { if case .subscribed(let t) = $0 { t } else { nil } }
        for t in running { t.cancel() }
        await server.stop()
    }
}
