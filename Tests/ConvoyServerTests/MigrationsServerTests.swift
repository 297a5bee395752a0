@testable import ConvoyServer
import Foundation
import Logging
import Testing

/// `convoy serve --app migrations`: a folder's SQL served on SQLite, and what it cannot serve refused at start at its
/// file and line, with the advice to use PostgreSQL.
@Suite struct MigrationsServerTests {
    static let table = """
        CREATE TABLE public.notes (
          id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
          owner uuid NOT NULL,
          body text NOT NULL
        );
        """
    static let secured = table + """

        ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
        CREATE POLICY "mine" ON public.notes FOR SELECT TO authenticated USING (owner = auth.uid());
        """

    static func start(_ sql: [String: String], configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> EmbeddedServer {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (name, text) in sql { try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        var config = ServerConfiguration.testing
        config.app = "migrations"
        config.migrationsDirectory = dir.path
        configure(&config)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return try await EmbeddedServer.start(config, logger: logger)
    }

    static func refusal(_ sql: [String: String], configure: (inout ServerConfiguration) -> Void = { _ in }) async -> String {
        do {
            let server = try await start(sql, configure: configure)
            await server.stop()
            return "served"
        } catch {
            return "\(error)"
        }
    }

    @Test func aFolderOfTablesPoliciesAndSQLFunctionsIsServed() async throws {
        let server = try await Self.start(["001.sql": Self.secured + """

            CREATE FUNCTION public.note_count(who uuid) RETURNS bigint LANGUAGE sql STABLE SECURITY DEFINER AS $$
              SELECT count(*) FROM public.notes WHERE owner = who
            $$;
            GRANT ALL ON public.notes TO authenticated;
            ALTER PUBLICATION supabase_realtime ADD TABLE public.notes;
            COMMENT ON TABLE public.notes IS 'notes';
            """])
        await server.stop()
    }

    @Test func whatSQLiteCannotServeIsRefusedAtItsFileAndLine() async {
        let trigger = await Self.refusal(["001.sql": Self.secured, "002.sql": """
            -- a trigger
            CREATE FUNCTION public.stamp() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
            """])
        #expect(trigger.contains("002.sql:2: a function not in LANGUAGE sql") && trigger.contains("use PostgreSQL"), "\(trigger)")
        let doBlock = await Self.refusal(["001.sql": Self.secured + "\nDO $$ BEGIN END $$;"])
        #expect(doBlock.contains("001.sql:8: DO") && doBlock.contains("use PostgreSQL"), "\(doBlock)")
        let open = await Self.refusal(["001.sql": Self.table])
        #expect(open.contains("001.sql:1: table notes has no row-level security"), "\(open)")
        let type = await Self.refusal(["001.sql": "CREATE TABLE public.t (id bigint PRIMARY KEY, tags text[]);"])
        #expect(type.contains("001.sql:1:") && type.contains("use PostgreSQL"), "\(type)")
        let invoker = await Self.refusal(["001.sql": Self.secured + """

            CREATE FUNCTION public.peek() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM public.notes $$;
            """])
        #expect(invoker.contains("SECURITY INVOKER"), "\(invoker)")
        // A function that writes would fail at its first call in the store's read pool; a set that reads is served.
        let writes = await Self.refusal(["001.sql": Self.secured + """

            CREATE FUNCTION public.wipe() RETURNS SETOF public.notes LANGUAGE sql SECURITY DEFINER AS $$ DELETE FROM public.notes RETURNING * $$;
            """])
        #expect(writes.contains("function wipe is not one SELECT") && writes.contains("use PostgreSQL"), "\(writes)")
        let reads = await Self.refusal(["001.sql": Self.secured + """

            CREATE FUNCTION public.owners() RETURNS SETOF uuid LANGUAGE sql SECURITY DEFINER AS $$ SELECT owner FROM public.notes $$;
            """])
        #expect(reads == "served")
    }

    @Test func itsPurgeIsTheDeclaredOnesAndAFunctionNeedsPostgreSQL() async {
        let function = await Self.refusal(["001.sql": Self.secured]) { $0.purgeFunction = "purge_notes" }
        #expect(function.contains("--purge-function needs PostgreSQL"), "\(function)")
        let half = await Self.refusal(["001.sql": Self.secured]) { $0.purgeTable = "notes" }
        #expect(half.contains("--purge-table and --purge-column go together"), "\(half)")
        let wrong = await Self.refusal(["001.sql": Self.secured]) { ($0.purgeTable, $0.purgeColumn) = ("notes", "created_at") }
        #expect(wrong.contains("has no such table and column"), "\(wrong)")
        let none = await Self.refusal([:]) { $0.migrationsDirectory = nil }
        #expect(none.contains("give --migrations DIR"), "\(none)")
    }

    /// A fuzz finding (Tests/ConvoyFuzzTests/Fuzz/sql/policy-unknown-column): a policy naming a column the table
    /// does not have was read, and every request on the table answered 500. PostgreSQL refuses it at CREATE POLICY;
    /// the SQLite store now refuses to start with it, naming the table, the command and SQLite's reason.
    @Test func aPolicySQLiteCannotRunIsRefusedAtStart() async {
        let refusal = await Self.refusal(["001.sql": Self.table + """

            ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
            CREATE POLICY "mine" ON public.notes FOR SELECT TO authenticated USING (nobody = auth.uid());
            """])
        #expect(refusal.contains("notes: the SELECT policy") && refusal.contains("no such column: nobody"), "\(refusal)")
        // The control: the same policy on a column the table has is served.
        #expect(await Self.refusal(["001.sql": Self.secured]) == "served")
    }
}
