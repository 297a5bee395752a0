import Foundation
import Logging
import PostgresNIO
import Testing
@testable import ConvoyServer

/// Realtime Authorization (private channels) as Supabase has it: a join is
/// allowed by the policies on `realtime.messages` (read), a broadcast or a
/// track by them again (write), computed at the join, at a token refresh and
/// at the first send; public channels of the same name are apart.
@Suite struct RealtimeAuthorizationTests {
    static func status(_ reply: [String: Any]) -> String? { (reply["payload"] as? [String: Any])?["status"] as? String }
    static func reason(_ reply: [String: Any]) -> String? {
        ((reply["payload"] as? [String: Any])?["response"] as? [String: Any])?["reason"] as? String
    }

    /// Green Box has no policy on `realtime.messages`: no user token and no anon key joins a private
    /// channel; the service role (which bypasses RLS) does; and what is said on a private channel is
    /// not heard on the public channel of the same name, nor the other way round.
    @Test(arguments: TestStore.all) func withoutPoliciesOnlyTheServiceRoleJoinsPrivateChannels(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp()
        let client = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        let refused = try await client.join("realtime:op_1_locations", token: a.token, isPrivate: true)
        #expect(Self.status(refused) == "error")
        #expect(Self.reason(refused) == "Unauthorized: You do not have permissions to read from this Channel topic: op_1_locations")
        let anon = try await client.join("realtime:op_1_chat", token: nil, isPrivate: true)
        #expect(Self.reason(anon) == "Unauthorized: You do not have permissions to read from this Channel topic: op_1_chat")

        let service = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.serviceRoleKey)
        #expect(Self.status(try await service.join("realtime:op_1_locations", token: s.keys.serviceRoleKey, ack: true, isPrivate: true)) == "ok")
        let listener = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        #expect(Self.status(try await listener.join("realtime:op_1_locations", token: a.token, ack: true)) == "ok")
        let privateSend = service.send("realtime:op_1_locations", "broadcast", ["type": "broadcast", "event": "pos", "payload": ["lat": 1]])
        #expect(Self.status(try await service.reply(to: privateSend)) == "ok")
        let publicSend = listener.send("realtime:op_1_locations", "broadcast", ["type": "broadcast", "event": "pos", "payload": ["lat": 2]])
        #expect(Self.status(try await listener.reply(to: publicSend)) == "ok")
        try await listener.sync()
        try await service.sync()
        #expect(await listener.count("broadcast") == 0, "the public channel does not hear the private one")
        #expect(await service.count("broadcast") == 0, "the private channel does not hear the public one")
        await s.stop()
    }

    /// Policies written in SQL decide on PostgreSQL: a user reads its own room and `shared`, and may
    /// only broadcast in its own room; a broadcast the policy refuses is dropped without a reply (as on
    /// Supabase), a track gets an error reply; a refreshed token for another user closes the channel.
    @Test(.enabled(if: PostgresTestCluster.enabled, "no PostgreSQL test cluster (make test starts one)"))
    func policiesOnRealtimeMessagesDecideOnPostgres() async throws {
        let s = try await TestServer(store: .postgres)
        try await Self.execute(s.server.configuration.databasePath!, """
            CREATE POLICY read_own_or_shared ON realtime.messages FOR SELECT TO authenticated
              USING (realtime.topic() IN ('room_' || auth.uid()::text, 'shared'));
            CREATE POLICY broadcast_in_own ON realtime.messages FOR INSERT TO authenticated
              WITH CHECK (realtime.topic() = 'room_' || auth.uid()::text AND extension = 'broadcast')
            """)
        let a = try await s.signUp(), b = try await s.signUp()
        let one = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        let two = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        let room = "realtime:room_\(a.id)"
        #expect(Self.status(try await one.join(room, token: a.token, ack: true, isPrivate: true)) == "ok")
        let intruder = try await two.join(room, token: b.token, isPrivate: true)
        #expect(Self.reason(intruder) == "Unauthorized: You do not have permissions to read from this Channel topic: room_\(a.id)")
        let anon = try await two.join(room, token: nil, isPrivate: true)
        #expect(Self.status(anon) == "error", "the anon key has no policy")

        let sent = one.send(room, "broadcast", ["type": "broadcast", "event": "pos", "payload": ["lat": 1]])
        #expect(Self.status(try await one.reply(to: sent)) == "ok")
        let track = one.send(room, "presence", ["type": "presence", "event": "track", "payload": ["online": true]])
        #expect(Self.status(try await one.reply(to: track)) == "error", "no policy lets a presence row be inserted")

        #expect(Self.status(try await one.join("realtime:shared", token: a.token, ack: true, isPrivate: true)) == "ok")
        #expect(Self.status(try await two.join("realtime:shared", token: b.token, isPrivate: true)) == "ok")
        let dropped = one.send("realtime:shared", "broadcast", ["type": "broadcast", "event": "pos", "payload": ["lat": 2]])
        try await one.sync()
        try await two.sync()
        #expect(await one.inbox.contains { $0["ref"] as? String == dropped } == false, "a refused broadcast gets no reply")
        #expect(await two.count("broadcast") == 0, "and reaches nobody")

        one.send(room, "access_token", ["access_token": b.token])
        let closed = try await one.next(topic: room, event: "system")
        #expect((closed["payload"] as? [String: Any])?["message"] as? String
                    == "You do not have permissions to read from this Channel topic: room_\(a.id)")
        _ = try await one.next(topic: room, event: "phx_close")
        await s.stop()
    }

    /// Runs `sql` on the database at `url` as the cluster's superuser.
    static func execute(_ url: String, _ sql: String) async throws {
        var logger = Logger(label: "test.pg")
        logger.logLevel = .critical
        let connection = try await PostgresConnection.connect(configuration: try PostgresURL(url).connection, id: 0, logger: logger)
        defer { Task { try? await connection.close() } }
        for statement in sql.components(separatedBy: ";\n") where !statement.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }
}
