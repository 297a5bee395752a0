import ConvoyServer
import Foundation
import Testing

/// `convoy schema greenbox` on a PostgreSQL 15 that has what a Supabase project
/// has (SQL/supabase_prelude.sql) and nothing of convoy serve's platform: it
/// applies (twice: idempotent), the RLS matrix that checks convoy serve's own
/// SQL holds on it too, and Realtime streams its tables through the publication.
@Suite(.serialized) struct SupabaseSchemaTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let required = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_POSTGRES"] == "1"

    /// A fresh cluster with the prelude and `sql` applied twice; `body` gets its URL. The cluster is stopped after.
    func withSupabaseLike(_ sql: String, _ body: (String) async throws -> Void) async throws {
        let script = Self.root.appendingPathComponent("scripts/pg-test-cluster").path
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-pg-\(UUID())").path
        let started = try await ChildProcess.run(script, ["start", dir])
        #expect(started.status == 0, "the PostgreSQL cluster did not start: \(started.err)")
        guard started.status == 0 else { return }
        let url = started.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("greenbox-\(UUID()).sql")
        try sql.write(to: file, atomically: true, encoding: .utf8)
        do {
            let prelude = try await ChildProcess.run("/usr/bin/psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-f",
                                                                        Self.root.appendingPathComponent("Tests/ConvoyServerTests/SQL/supabase_prelude.sql").path])
            #expect(prelude.status == 0, "\(prelude.err)")
            for _ in 0..<2 {
                let applied = try await ChildProcess.run("/usr/bin/psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-f", file.path])
                #expect(applied.status == 0, "\(applied.err)")
            }
            try await body(url)
        } catch {
            Issue.record(error)
        }
        try? FileManager.default.removeItem(at: file)
        _ = try? await ChildProcess.run(script, ["stop", dir])
    }

    @Test(.enabled(if: required || PostgresPolicyTests.available, "PostgreSQL is not installed: run scripts/setup"))
    func theCodesSchemaPassesTheRLSMatrixOnASupabaseLikeDatabase() async throws {
        let sql = try SupabaseSchema.sql(app: "greenbox", options: ["pairing": "codes"])
        let code = sql.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("--") }.joined(separator: "\n")
        for only in ["auth.now()", "auth.convoy_settings", "auth.attach_realtime", "auth.request("] {
            #expect(!code.contains(only), "\(only) is convoy serve's, not Supabase's")
        }
        try await withSupabaseLike(sql) { url in
            let matrix = try await ChildProcess.run("/usr/bin/psql", [url, "-q", "-f",
                                                                       Self.root.appendingPathComponent("Tests/ConvoyServerTests/SQL/rls_matrix.sql").path])
            #expect(matrix.status == 0, "\(matrix.err.split(separator: "\n").filter { !$0.contains("check ok") }.joined(separator: "\n"))")
            #expect(matrix.err.components(separatedBy: "check ok:").count - 1 == 59, "the matrix convoy serve's SQL passes")
            let published = try await ChildProcess.run("/usr/bin/psql", [url, "-At", "-c",
                "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables WHERE pubname = 'supabase_realtime'"])
            #expect(published.out.trimmingCharacters(in: .whitespacesAndNewlines) == "encrypted_locations,friendships")
        }
    }

    @Test(.enabled(if: required || PostgresPolicyTests.available, "PostgreSQL is not installed: run scripts/setup"))
    func thePRDSchemaHasNoInviteCodesAndItsPairingHolds() async throws {
        let sql = try SupabaseSchema.sql(app: "greenbox")
        #expect(!sql.contains("create_invite") && !sql.contains("public.invites"))
        try await withSupabaseLike(sql) { url in
            let a = "aaaaaaaa-0000-4000-8000-00000000000a", b = "bbbbbbbb-0000-4000-8000-00000000000b"
            func claims(_ who: String) -> String { "SELECT set_config('request.jwt.claims', '{\"sub\":\"\(who)\",\"role\":\"authenticated\"}', true); SET LOCAL ROLE authenticated;" }
            let script = """
                INSERT INTO auth.users (id, email) VALUES ('\(a)', 'a@x'), ('\(b)', 'b@x');
                BEGIN; \(claims(b)) INSERT INTO public.users (id, public_key) VALUES ('\(b)', 'pk-b'); COMMIT;
                BEGIN; \(claims(a)) INSERT INTO public.users (id, public_key) VALUES ('\(a)', 'pk-a');
                  INSERT INTO public.friendships (user_id_1, user_id_2, status, requested_by, preference_1) VALUES ('\(a)', '\(b)', 'pending', '\(a)', 'precise'); COMMIT;
                BEGIN; \(claims(b))
                  UPDATE public.friendships SET status = 'active', preference_2 = 'general' WHERE requested_by = '\(a)'; COMMIT;
                BEGIN; \(claims(a)) INSERT INTO public.encrypted_locations (sender_id, recipient_id, payload) VALUES ('\(a)', '\(b)', 'sealed'); COMMIT;
                BEGIN; \(claims(b)) SELECT 'seen:' || count(*) FROM public.encrypted_locations; SELECT 'active:' || count(*) FROM public.friendships WHERE status = 'active'; COMMIT;
                BEGIN; \(claims(a)) SELECT 'sender-sees:' || count(*) FROM public.encrypted_locations; COMMIT;
                """
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("pairing-\(UUID()).sql")
            try script.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try await ChildProcess.run("/usr/bin/psql", [url, "-At", "-v", "ON_ERROR_STOP=1", "-f", file.path])
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out.contains("seen:1") && run.out.contains("active:1") && run.out.contains("sender-sees:0"), "\(run.out)")
        }
    }

    /// `convoy schema survale`: applies twice, streams its tables, and its policies on `realtime.messages`
    /// let a member read and write the operation's channel and nobody else (Supabase's check, by hand).
    @Test(.enabled(if: required || PostgresPolicyTests.available, "PostgreSQL is not installed: run scripts/setup"))
    func theSurvaleSchemaGuardsItsChannelsOnASupabaseLikeDatabase() async throws {
        let sql = try SupabaseSchema.sql(app: "survale")
        let code = sql.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("--") }.joined(separator: "\n")
        for only in ["auth.now()", "auth.convoy_settings", "auth.attach_realtime", "auth.request("] {
            #expect(!code.contains(only), "\(only) is convoy serve's, not Supabase's")
        }
        try await withSupabaseLike(sql) { url in
            let (ag, tm) = ("a0000000-0000-4000-8000-000000000001", "b0000000-0000-4000-8000-000000000001")
            let (ca, out) = ("c0000000-0000-4000-8000-00000000000c", "d0000000-0000-4000-8000-00000000000d")
            func claims(_ who: String) -> String { "SELECT set_config('request.jwt.claims', '{\"sub\":\"\(who)\",\"role\":\"authenticated\"}', true); SET LOCAL ROLE authenticated;" }
            func channel(_ who: String, _ op: String) -> String {
                """
                BEGIN; SELECT set_config('realtime.topic', 'op_' || \(op) || '_locations', true);
                  INSERT INTO realtime.messages (topic, extension) VALUES (realtime.topic(), 'broadcast');
                  \(claims(who)) SELECT 'reads:' || count(*) FROM realtime.messages WHERE topic = realtime.topic(); ROLLBACK;
                """
            }
            let op = "(SELECT id::text FROM public.operations LIMIT 1)"
            let script = """
                INSERT INTO auth.users (id, email) VALUES ('\(ca)', 'ca@x'), ('\(out)', 'out@x');
                INSERT INTO public.agencies (id, name) VALUES ('\(ag)', 'A');
                INSERT INTO public.teams (id, agency_id, name) VALUES ('\(tm)', '\(ag)', 'A1');
                INSERT INTO public.users (id, team_id, agency_id, callsign) VALUES ('\(ca)', '\(tm)', '\(ag)', 'CA'), ('\(out)', '\(tm)', '\(ag)', 'O');
                BEGIN; \(claims(ca)) SELECT public.start_operation((public.create_operation('Op')->>'id')::uuid) IS NOT NULL; COMMIT;
                \(channel(ca, op))
                \(channel(out, op))
                """
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("survale-\(UUID()).sql")
            try script.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try await ChildProcess.run("/usr/bin/psql", [url, "-At", "-v", "ON_ERROR_STOP=1", "-f", file.path])
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out.components(separatedBy: "\n").filter { $0.hasPrefix("reads:") } == ["reads:1", "reads:0"], "\(run.out)")
            let published = try await ChildProcess.run("/usr/bin/psql", [url, "-At", "-c",
                "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables WHERE pubname = 'supabase_realtime'"])
            #expect(published.out.trimmingCharacters(in: .whitespacesAndNewlines)
                        == "join_requests,op_messages,operation_invites,operation_members,operations")
        }
    }

    @Test func badOptionsAreRefusedNamingTheOption() {
        #expect(throws: SupabaseSchema.Invalid.self) { try SupabaseSchema.sql(app: "greenbox", options: ["pairing": "smoke-signals"]) }
        #expect(throws: SupabaseSchema.Invalid.self) { try SupabaseSchema.sql(app: "greenbox", options: ["colour": "blue"]) }
        #expect(throws: SupabaseSchema.Invalid.self) { try SupabaseSchema.sql(app: "quickpic") }
        #expect(throws: SupabaseSchema.Invalid.self) { try SupabaseSchema.sql(app: "survale", options: ["pairing": "codes"]) }
        #expect(SupabaseSchema.options(of: "greenbox")?.map(\.option) == ["pairing", "policies", "purge"])
    }
}
