import Foundation
import GRDB
import Logging
import PostgresNIO
import Testing
@testable import ConvoyServer

/// The server side of the app seam: every app's schema, SQLite policies and
/// SQLite tables agree; the PostgreSQL store applies the app's SQL (its
/// tables, RLS and policy choices) after the platform's; databases set up
/// before the seam still open.
@Suite struct AppSeamTests {
    @Test func greenBoxListsItsTables() throws {
        let app = try #require(ServerApps.make("greenbox"))
        #expect(ServerApps.defaultName == "greenbox" && ServerApps.names.contains("greenbox"))
        #expect(Set(app.schema.tables.keys) == ["users", "friendships", "encrypted_locations", "invites", "purge_log"])
        #expect(ServerApps.make("nosuchapp") == nil)
        #expect(throws: ServerConfiguration.Invalid.self) {
            var c = ServerConfiguration.testing
            c.app = "nosuchapp"
            try c.validate()
        }
    }

    /// `--weaken` names are each server kind's own: read into the configuration as names, typed by the app's folder,
    /// and refused, naming their owner, for an app that does not have them.
    @Test func weaknessesBelongToTheirServerKind() throws {
        var quickpic = ServerConfiguration.testing
        quickpic.app = "quickpic"
        guard case .success = ServerApps.weaken("keep-acked, unsigned", into: &quickpic) else { Issue.record("quickpic's names refused"); return }
        #expect(quickpic.weaknesses == ["keep-acked", "unsigned"])
        #expect(quickpic.quickPicWeaknesses == [.keepAcked, .unsigned])
        #expect(quickpic.closerWeaknesses.isEmpty)
        try quickpic.validate()
        guard case .failure(let unknown) = ServerApps.weaken("keep-acked,no-accept-limit", into: &quickpic) else {
            Issue.record("closer's name taken for quickpic's")
            return
        }
        #expect(unknown.name == "no-accept-limit")

        var closer = ServerConfiguration.testing
        closer.app = "closer"
        closer.weaknesses = ["keep-acked"]
        #expect {
            try closer.validate()
        } throws: { error in
            "\(error)".contains("keep-acked is not one of closer's rules: it is quickpic's (--app quickpic)")
        }
        var greenbox = ServerConfiguration.testing
        #expect(ServerApps.weaken("keep-acked", into: &greenbox) == nil)
        greenbox.closerWeaknesses = [.noAcceptLimit]
        #expect(throws: ServerConfiguration.Invalid.self) { try greenbox.validate() }
    }

    /// An app's own settings are checked by its kind alone, with the same bounds as the platform's durations.
    @Test func appSettingsAreCheckedByTheirKind() throws {
        var closer = ServerConfiguration.testing
        closer.app = "closer"
        closer.questionEvery = 0.5
        #expect { try closer.validate() } throws: { "\($0)".contains("question interval must be between 1.0 s") }
        var quickpic = ServerConfiguration.testing
        quickpic.app = "quickpic"
        quickpic.loginLimit = 0
        #expect { try quickpic.validate() } throws: { "\($0)".contains("login limit must be 1…1000000") }
        quickpic.loginLimit = 7
        #expect(quickpic.loginLimit == 7 && quickpic.appSettings["login-limit"] == 7)
        var survale = ServerConfiguration.testing
        survale.app = "survale"
        #expect(survale.autoEndAfter == 600)
        survale.autoEndAfter = .infinity
        #expect { try survale.validate() } throws: { "\($0)".contains("auto-end time") }
    }

    /// What the SQLite store serves (the schema), what it enforces (the
    /// policies) and what its migrations make are the same tables and columns.
    @Test(arguments: ServerApps.supabaseNames) func anAppsSchemaPoliciesAndSQLiteTablesAgree(name: String) throws {
        let app = try #require(ServerApps.make(name))
        let tables = Set(app.schema.tables.keys)
        #expect(Set(app.policies(strict: false).tables.keys) == tables)
        #expect(Set(app.policies(strict: true).tables.keys) == tables)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-app-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: dir.appendingPathComponent("app.sqlite").path, app: app)
        for (table, described) in app.schema.tables {
            let columns = try store.pool.read { db in try db.columns(in: table).map(\.name) }
            #expect(Set(columns) == Set(described.columns.map(\.name)), "\(table)")
            #expect(described.column(described.primaryKey) != nil, "\(table)'s primary key is one of its columns")
        }
    }

    /// A file written before the app seam (one migration made the auth tables
    /// and Green Box's) opens as it is, with its rows.
    @Test func aSQLiteFileFromBeforeTheSeamOpens() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-old-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("old.sqlite").path
        let secret = "s3cret-for-this-test-only-32-bytes+"
        // The layout the previous build wrote: auth and Green Box in its v1, and its v2.
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: Self.layoutBeforeTheSeam)
            try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            try db.execute(sql: """
                INSERT INTO grdb_migrations VALUES ('v1: auth and Green Box'), ('v2: refresh token parents, for the reuse interval')
                """)
        }
        try queue.close()

        let first = try await TestServer { $0.databasePath = path; $0.jwtSecret = secret }
        let a = try await first.signUp("old@example.com")
        #expect(try await first.request("POST", "/rest/v1/encrypted_locations",
                                        body: ["sender_id": a.id, "recipient_id": a.id, "payload": "kept"], token: a.token).status == 201)
        await first.stop()
        let second = try await TestServer { $0.databasePath = path; $0.jwtSecret = secret }
        let rows = try await second.request("GET", "/rest/v1/encrypted_locations?select=payload", token: a.token).rows
        #expect(rows.map { $0["payload"] as? String } == ["kept"])
        await second.stop()
        let reopened = try DatabaseQueue(path: path)
        let applied = try await reopened.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations") }
        // Every migration this build has, once: the old ones as they were, the app's, the settings and Storage's tables added.
        #expect(Set(applied) == ["v1: auth and Green Box", "v2: refresh token parents, for the reuse interval", "greenbox v1: the PRD's tables",
                                 "v3: server settings (the JWT secret)", "v4: object storage (buckets and objects)"])
        try reopened.close()
    }

    /// The PostgreSQL store applies Green Box's SQL: RLS on each of its tables,
    /// its policies, and `--strict-policies`' choice; the tables it serves are
    /// the ones the SQLite store serves, column for column.
    @Test(.enabled(if: PostgresTestCluster.enabled, "no PostgreSQL test cluster (make test starts one)"))
    func thePostgreSQLStoreAppliesGreenBoxsPolicies() async throws {
        let s = try await TestServer(store: .postgres)
        let app = try #require(ServerApps.make("greenbox"))
        let served = try #require(s.server.postgres?.schema)
        for (table, described) in app.schema.tables {
            #expect(served.tables[table].map { Set($0.columns.map(\.name)) } == Set(described.columns.map(\.name)), "\(table)")
        }
        let secured = try await Self.rows(s, """
            SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relrowsecurity
            """)
        #expect(Set(app.schema.tables.keys).isSubset(of: Set(secured)), "\(secured)")
        let policies = try await Self.rows(s, "SELECT tablename || '.' || policyname FROM pg_policies WHERE schemaname = 'public'")
        #expect(Set(policies) == [
            "users.users_select", "users.users_insert", "users.users_update",
            "friendships.friendships_select", "friendships.friendships_insert", "friendships.friendships_update",
            "friendships.friendships_delete", "encrypted_locations.encrypted_locations_insert",
            "encrypted_locations.encrypted_locations_select", "invites.invites_select",
        ], "\(policies.sorted())")
        let insertCheck = "SELECT with_check FROM pg_policies WHERE policyname = 'encrypted_locations_insert'"
        #expect(try await Self.rows(s, insertCheck).first?.contains("friendships") == false, "the PRD's rule by default")
        await s.stop()

        var strict = s.server.configuration
        strict.port = 0
        strict.strictPolicies = true
        let again = try await TestServer(store: .postgres) { $0 = strict }
        #expect(try await Self.rows(again, insertCheck).first?.contains("friendships") == true, "--strict-policies: active friends only")
        await again.stop()
    }

    /// A database an older build set up (one file, `001_greenbox.sql`, held the
    /// platform and Green Box; no `000_platform.sql` recorded) is brought up to
    /// date in place: the files apply again over what is there, rows kept.
    @Test(.enabled(if: PostgresTestCluster.enabled, "no PostgreSQL test cluster (make test starts one)"))
    func aPostgreSQLDatabaseFromBeforeTheSeamIsBroughtUpToDate() async throws {
        let s = try await TestServer(store: .postgres) { $0.jwtSecret = "s3cret-for-this-test-only-32-bytes+" }
        let a = try await s.signUp(), b = try await s.signUp()
        #expect(try await s.request("POST", "/rest/v1/encrypted_locations",
                                    body: ["sender_id": a.id, "recipient_id": b.id, "payload": "kept"], token: a.token).status == 201)
        await s.stop()
        try await PostgresStoreTests.execute(s, "DELETE FROM auth.convoy_migrations WHERE name = '000_platform.sql'")
        try await PostgresStoreTests.execute(s, "UPDATE auth.convoy_migrations SET checksum = 'an older build' WHERE name = '001_greenbox.sql'")

        var config = s.server.configuration
        config.port = 0
        let again = try await TestServer(store: .postgres) { $0 = config }
        let rows = try await again.request("GET", "/rest/v1/encrypted_locations?select=payload", token: b.token).rows
        #expect(rows.map { $0["payload"] as? String } == ["kept"])
        let recorded = try await Self.rows(again, "SELECT name || ' ' || checksum FROM auth.convoy_migrations ORDER BY name")
        let files = try Migrations.platform.files.map { ($0, Migrations.platform.folder) }
            + ["001_greenbox.sql", "003_invite_codes.sql"].map { ($0, "GreenBoxSQL") }
        #expect(recorded == (try files.map { "\($0.0) \(Migrations.checksum(try Migrations.resource($0.0, folder: $0.1)))" }.sorted()))
        await again.stop()
    }

    /// Each row's one text value, run on the server's database as its owner.
    static func rows(_ s: TestServer, _ sql: String) async throws -> [String] {
        var logger = Logger(label: "test.pg")
        logger.logLevel = .critical
        let connection = try await PostgresConnection.connect(configuration: try PostgresURL(s.server.configuration.databasePath!).connection,
                                                              id: 1, logger: logger)
        var out: [String] = []
        do {
            for try await (value,) in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode((String,).self) {
                out.append(value)
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
        return out
    }

    /// The SQLite layout before the app seam: its v1 made these, and its v2 added `parent`.
    static let layoutBeforeTheSeam = """
        CREATE TABLE auth_users (
          id TEXT PRIMARY KEY, email TEXT UNIQUE, password_hash TEXT,
          is_anonymous INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
          last_sign_in_at TEXT);
        CREATE TABLE auth_sessions (
          id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
          created_at TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE auth_refresh_tokens (
          token TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES auth_sessions(id) ON DELETE CASCADE,
          user_id TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);
        CREATE TABLE users (
          id TEXT PRIMARY KEY REFERENCES auth_users(id) ON DELETE CASCADE,
          created_at TEXT NOT NULL, full_name TEXT, avatar_url TEXT, public_key TEXT NOT NULL);
        CREATE TABLE friendships (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          user_id_1 TEXT NOT NULL REFERENCES users(id), user_id_2 TEXT NOT NULL REFERENCES users(id),
          status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'active')),
          requested_by TEXT NOT NULL REFERENCES users(id),
          preference_1 TEXT CHECK (preference_1 IN ('precise', 'general')),
          preference_2 TEXT CHECK (preference_2 IN ('precise', 'general')),
          created_at TEXT NOT NULL,
          CHECK (user_id_1 <> user_id_2));
        CREATE INDEX friendships_user_1 ON friendships(user_id_1);
        CREATE INDEX friendships_user_2 ON friendships(user_id_2);
        CREATE TABLE encrypted_locations (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          sender_id TEXT NOT NULL REFERENCES users(id), recipient_id TEXT NOT NULL REFERENCES users(id),
          payload TEXT NOT NULL, created_at TEXT NOT NULL);
        CREATE INDEX encrypted_locations_recipient ON encrypted_locations(recipient_id, created_at);
        CREATE INDEX encrypted_locations_created ON encrypted_locations(created_at);
        CREATE TABLE invites (
          code TEXT PRIMARY KEY, inviter_id TEXT NOT NULL REFERENCES users(id),
          preference TEXT NOT NULL CHECK (preference IN ('precise', 'general')),
          created_at TEXT NOT NULL, expires_at TEXT NOT NULL, accepted_by TEXT REFERENCES users(id),
          accepted_at TEXT);
        CREATE TABLE purge_log (
          id INTEGER PRIMARY KEY AUTOINCREMENT, ran_at TEXT NOT NULL, deleted INTEGER NOT NULL,
          cutoff TEXT NOT NULL);
        ALTER TABLE auth_refresh_tokens ADD COLUMN parent TEXT;
        """
}
