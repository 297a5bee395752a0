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

    /// The review's findings, each as a case: what Realtime sends is what the
    /// subscriber's own read returns; a restart keeps what migrations changed;
    /// owner-run views are not served; a pool of one still serves; `{}`,
    /// array arguments and OUT arguments work as in PostgREST.
    @Test(.enabled(if: PostgresTestCluster.enabled, "no PostgreSQL test cluster (make test starts one)"))
    func migrationsKeepTheirGrantsAndRealtimeSendsOnlyWhatRLSReads() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-migrations-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try """
            CREATE TABLE public.notes (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, secret text);
            ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
            CREATE POLICY notes_read ON public.notes FOR SELECT TO authenticated USING (true);
            REVOKE SELECT ON public.notes FROM authenticated, anon;
            GRANT SELECT (id, body) ON public.notes TO authenticated;
            -- Tighter than Green Box's: a user reads only their own profile.
            DROP POLICY users_select ON public.users;
            CREATE POLICY users_select ON public.users FOR SELECT TO authenticated USING (id = auth.uid());
            CREATE VIEW public.all_users AS SELECT id, public_key FROM public.users;
            CREATE VIEW public.my_users WITH (security_invoker = true) AS SELECT id, public_key FROM public.users;
            CREATE TABLE public.ticks (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
            CREATE FUNCTION public.total(xs int[]) RETURNS int LANGUAGE sql AS $$ SELECT sum(x)::int FROM unnest(xs) x $$;
            CREATE FUNCTION public.shout(x text, OUT y text) LANGUAGE sql AS $$ SELECT upper(x) $$;
            """.write(to: dir.appendingPathComponent("001_probe.sql"), atomically: true, encoding: .utf8)
        let s = try await TestServer(store: .postgres) {
            $0.migrationsDirectory = dir.path
            $0.postgresConnections = 1
        }
        let a = try await s.signUp(), b = try await s.signUp()
        #expect(try await s.request("GET", "/rest/v1/users", token: a.token).rows.count == 1, "the migration's policy")
        #expect(try await s.request("GET", "/rest/v1/all_users", token: a.token).code == "PGRST205", "an owner-run view is not served")
        #expect(try await s.request("GET", "/rest/v1/my_users", token: a.token).rows.count == 1, "an invoker view is, under RLS")
        #expect(try await s.request("POST", "/rest/v1/ticks", body: [String: Any](), token: a.token).status == 201, "{} is a row of defaults")
        let total = try await s.request("POST", "/rest/v1/rpc/total", body: ["xs": [1, 2, 3]], token: a.token)
        #expect(total.status == 200 && total.json as? Int == 6, "\(String(decoding: total.body, as: UTF8.self))")
        let shout = try await s.request("POST", "/rest/v1/rpc/shout", body: ["x": "hi"], token: a.token)
        #expect(shout.json as? String == "HI", "\(String(decoding: shout.body, as: UTF8.self))")

        // Realtime: Bob may read notes' id and body, never their secret. The row as
        // the server reads it has the secret; Bob's own read fails, so he gets nothing.
        let bob = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        _ = try await bob.join("realtime:b", token: b.token, changes: RealtimeTests.locations(b.id)
                               + [["event": "INSERT", "schema": "public", "table": "notes"]])
        try await Self.execute(s, "INSERT INTO notes (body, secret) VALUES ('hello', 'SECRET')")
        try await Self.execute(s, "INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES ('\(a.id)', '\(b.id)', 'after')")
        let change = try await bob.next(topic: "realtime:b", event: "postgres_changes")
        let record = ((change["payload"] as? [String: Any])?["data"] as? [String: Any])?["record"] as? [String: Any]
        #expect(record?["payload"] as? String == "after", "the first change Bob gets is the location, not the note")
        try await bob.sync()
        #expect(await bob.count("postgres_changes") == 0)
        await s.stop()

        // A restart applies nothing again that would undo the migration.
        var config = s.server.configuration
        config.port = 0
        let again = try await TestServer(store: .postgres) { $0 = config }
        let user = try await again.signUp()
        #expect(try await again.request("GET", "/rest/v1/users", token: user.token).rows.count == 1)
        await again.stop()
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
        // A comment between tokens still separates them; `$` inside an identifier is not a quote.
        #expect(SQLScript.statements("CREATE TABLE t (id int/**/PRIMARY KEY); SELECT a$b$ FROM t; SELECT 1").map(\.sql)
                    == ["CREATE TABLE t (id int PRIMARY KEY)", "SELECT a$b$ FROM t", "SELECT 1"])
    }
}
