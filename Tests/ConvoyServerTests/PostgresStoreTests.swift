import Foundation
import Logging
import PostgresNIO
import Testing
@testable import ConvoyServer

/// What only the PostgreSQL store does: Realtime fed by the database (rows
/// written by any client), `--migrations` with another seed's schema, and
/// migration errors that name their file and line.
@Suite struct PostgresStoreTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs `sql` on the server's database as its owner: another client.
    static func execute(_ s: TestServer, _ sql: String) async throws {
        var logger = Logger(label: "test.pg")
        logger.logLevel = .critical
        let connection = try await PostgresConnection.connect(configuration: try PostgresURL(s.server.configuration.databasePath!).connection,
                                                              id: 1, logger: logger)
        defer { Task { try? await connection.close() } }
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }

    @Test(.enabled(if: PostgresTestCluster.enabled, "no PostgreSQL test cluster (make test starts one)"))
    func rowsWrittenByAnyClientReachSubscribersThroughRLS() async throws {
        let s = try await TestServer(store: .postgres)
        let a = try await s.signUp(), b = try await s.signUp(), c = try await s.signUp()
        let bob = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await bob.join("realtime:b", token: b.token, changes: RealtimeTests.locations(b.id))
        // Carol subscribes to every location row: PostgreSQL's RLS sends her only her own.
        let carol = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await carol.join("realtime:all", token: c.token,
                                 changes: [["event": "*", "schema": "public", "table": "encrypted_locations"]])

        try await Self.execute(s, "INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES ('\(a.id)', '\(b.id)', 'from-psql')")
        let change = try await bob.next(topic: "realtime:b", event: "postgres_changes")
        let record = try #require(((change["payload"] as? [String: Any])?["data"] as? [String: Any])?["record"] as? [String: Any])
        #expect(record["payload"] as? String == "from-psql" && record["sender_id"] as? String == a.id && record["id"] is Int)

        try await Self.execute(s, "INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES ('\(a.id)', '\(c.id)', 'for-carol')")
        let mine = try await carol.next(topic: "realtime:all", event: "postgres_changes")
        let carolsRecord = ((mine["payload"] as? [String: Any])?["data"] as? [String: Any])?["record"] as? [String: Any]
        #expect(carolsRecord?["payload"] as? String == "for-carol", "the first change Carol sees is her own, not Bob's")
        try await carol.sync()
        #expect(await carol.count("postgres_changes") == 0, "nothing of Bob's is queued for her either")
        await s.stop()
    }

    @Test(.enabled(if: PostgresTestCluster.enabled, "no PostgreSQL test cluster (make test starts one)"))
    func migrationsLoadAnotherSeedAndItsPoliciesAreEnforced() async throws {
        let dir = Self.root.appendingPathComponent("examples/migrations/naarscars").path
        let s = try await TestServer(store: .postgres) { $0.migrationsDirectory = dir }
        let a = try await s.signUp(withProfile: false), b = try await s.signUp(withProfile: false)
        // Realtime on a --migrations table: the service role (no RLS) and a user subscribe to rides.
        let rides: [[String: Any]] = [["event": "INSERT", "schema": "public", "table": "rides"]]
        let admin = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await admin.join("realtime:rides", token: s.keys.serviceRoleKey, changes: rides)
        let user = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await user.join("realtime:rides", token: b.token, changes: rides)
        // profiles_insert_own: one's own profile only.
        #expect(try await s.request("POST", "/rest/v1/profiles", body: ["id": a.id, "name": "A"], token: a.token).status == 201)
        let forged = try await s.request("POST", "/rest/v1/profiles", body: ["id": b.id, "name": "B", "approved": true], token: a.token)
        #expect(forged.status == 403 && forged.code == "42501")
        // rides_insert_own: a ride for oneself; never for someone else.
        #expect(try await s.request("POST", "/rest/v1/rides", body: ["user_id": a.id, "pickup": "station"], token: a.token).status == 201)
        #expect(try await s.request("POST", "/rest/v1/rides", body: ["user_id": b.id, "pickup": "x"], token: a.token).code == "42501")
        // The seed's profiles_select_approved reads profiles inside profiles' own policy:
        // PostgreSQL refuses it, so every profile and ride read fails. A finding, shown as PostgreSQL reports it.
        let profiles = try await s.request("GET", "/rest/v1/profiles", token: a.token)
        #expect(profiles.status == 500 && profiles.code == "42P17")
        #expect(try await s.request("GET", "/rest/v1/rides", token: a.token).code == "42P17")
        // The user's RLS check fails the same way, so the ride reaches only the service role.
        let ride = try await admin.next(topic: "realtime:rides", event: "postgres_changes")
        #expect((((ride["payload"] as? [String: Any])?["data"] as? [String: Any])?["record"] as? [String: Any])?["pickup"] as? String == "station")
        try await user.sync()
        #expect(await user.count("postgres_changes") == 0)
        // The service role bypasses RLS; booleans and integers keep their JSON types.
        let all = try await s.request("GET", "/rest/v1/rides?select=pickup,seats", token: s.keys.serviceRoleKey, apikey: .some(s.keys.serviceRoleKey))
        #expect(all.rows.count == 1 && all.rows.first?["seats"] as? Int == 1)
        let approved = try await s.request("GET", "/rest/v1/profiles?select=approved", token: s.keys.serviceRoleKey, apikey: .some(s.keys.serviceRoleKey))
        #expect(approved.rows.first?["approved"] as? Bool == false)
        await s.stop()

        // A restart applies nothing twice (CREATE TABLE would fail if it did).
        var config = s.server.configuration
        config.port = 0
        _ = try await ReferenceServer(configuration: config)
    }

    @Test(.enabled(if: PostgresTestCluster.enabled, "no PostgreSQL test cluster (make test starts one)"))
    func aBrokenMigrationNamesItsFileAndLine() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-migrations-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try "-- fine\nCREATE TABLE public.ok (id int PRIMARY KEY);\n\nCREATE TABLE public.broken (id int PRIMARY KEY,\n  oops nosuchtype);\n"
            .write(to: dir.appendingPathComponent("010_broken.sql"), atomically: true, encoding: .utf8)
        var config = ServerConfiguration.testing
        config.databasePath = try await PostgresTestCluster.freshDatabase()
        config.migrationsDirectory = dir.path
        do {
            _ = try await ReferenceServer(configuration: config)
            Issue.record("a broken migration was accepted")
        } catch let error as ServerConfiguration.Invalid {
            #expect(error.description.contains("010_broken.sql:4:") && error.description.contains("nosuchtype"), "\(error)")
        }
        // All or nothing: the file's first table is not there either.
        config.migrationsDirectory = nil
        let s = try await ReferenceServer(configuration: config)
        #expect(s.postgres?.schema.tables["ok"] == nil)
    }

    @Test func sqlScriptsSplitLikePsql() {
        let script = """
            -- a comment; not a statement
            CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT 'a;b' $$;
            /* block; /* nested; */ still comment */ SELECT 'it''s; fine', "odd;name", E'\\';';
            DO $body$ BEGIN PERFORM 1; END $body$;
            SELECT $1
            """
        let statements = SQLScript.statements(script)
        #expect(statements.map(\.line) == [2, 3, 4, 5])
        #expect(statements[0].sql == "CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT 'a;b' $$")
        #expect(statements[1].sql == #"SELECT 'it''s; fine', "odd;name", E'\';'"#)
        #expect(statements[2].sql == "DO $body$ BEGIN PERFORM 1; END $body$")
        #expect(statements[3].sql == "SELECT $1")
    }
}
