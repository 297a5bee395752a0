import Foundation

/// Survale's SQL as a migration for the user's own Supabase project
/// (`convoy schema survale`, docs/supabase.md): 001_survale.sql and
/// 002_survale_rpc.sql — the files `convoy serve --app survale --database
/// postgres://…` applies — with what only `convoy serve` has swapped for what
/// Supabase has: its clock `auth.now()` → `now()`; its Realtime triggers →
/// the tables added to the `supabase_realtime` publication; its purge loop →
/// a pg_cron job every hour (or none, `--purge none`). The policies on
/// `realtime.messages` are Supabase's own Realtime Authorization. Auto-end
/// needs to know who is on an operation's channels, which only Realtime
/// knows: call `survale_auto_end(connected, idle_seconds)` from what reads
/// presence (an Edge Function), as `convoy serve` calls it every few seconds.
extension SurvaleServer {
    var supabaseOptions: [(option: String, values: [String])] { [("purge", ["pg_cron", "none"])] }

    func supabaseSQL(_ options: [String: String]) throws -> String {
        let purge = options["purge"] ?? "pg_cron"
        var parts = ["""
            -- Survale (survale-spec.md) for a Supabase project, as Convoy load-tests it.
            -- Made by `convoy schema survale --purge \(purge)`: the SQL `convoy serve --app survale
            -- --database postgres://…` applies, with its clock, Realtime triggers and purge loop swapped
            -- for now(), the supabase_realtime publication and pg_cron (docs/supabase.md). Idempotent.
            -- Auto-end: call public.survale_auto_end(<ids of operations with someone on their channels>,
            -- 600) every few seconds from what can read Realtime presence (an Edge Function).

            """]
        parts.append("-- Server-stamped creation times (what convoy serve's platform defines).\n"
                     + SupabaseSchema.portable(try SupabaseSchema.platformFunction("public.stamp_created_at")))
        let core = try GreenBoxServer.replacing(try Migrations.resource("001_survale.sql", folder: postgresFolder), Self.realtimeAttach,
                                                with: GreenBoxServer.publication(Self.realtimeTables))
        parts.append(SupabaseSchema.portable(core))
        parts.append(SupabaseSchema.portable(try Migrations.resource("002_survale_rpc.sql", folder: postgresFolder)))
        parts.append(SupabaseSchema.portable(try Migrations.resource("003_survale_media.sql", folder: postgresFolder)))
        if purge == "pg_cron" { parts.append(Self.cron) }
        return parts.joined(separator: "\n")
    }

    static let realtimeTables = ["operations", "operation_members", "operation_invites", "join_requests", "op_messages"]

    static let realtimeAttach = """
        DO $$ BEGIN
          PERFORM auth.attach_realtime(format('public.%I', t)::regclass, 'id')
             FROM unnest(ARRAY['operations', 'operation_members', 'operation_invites', 'join_requests', 'op_messages']) t;
        END $$;
        """

    static let cron = SupabaseSchema.cronJob("Retention (spec §2): the purge every hour, as pg_cron runs it on Supabase.",
                                             name: "purge-ended-operations", schedule: "0 * * * *",
                                             statement: "SELECT public.purge_ended_operations('7 days')", every: "hour")
}
