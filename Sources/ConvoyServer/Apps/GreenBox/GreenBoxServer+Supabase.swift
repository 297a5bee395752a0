import Foundation

/// Green Box's SQL as a migration for the user's own Supabase project
/// (`convoy schema greenbox`, docs/supabase.md): 001_greenbox.sql, the
/// location insert policy, and with `--pairing codes` 003_invite_codes.sql —
/// the files `convoy serve --database postgres://…` applies — with four
/// things only `convoy serve` has swapped for what Supabase has:
/// - its clock `auth.now()` (which tests move) → `now()`;
/// - its settings table → the invite TTL written in (7 days);
/// - its Realtime triggers (`auth.attach_realtime`) → the tables added to the
///   `supabase_realtime` publication, which Supabase Realtime streams (RLS
///   decides who receives each change);
/// - its purge loop → a pg_cron job every minute (or none, `--purge none`:
///   call `purge_old_locations` yourself, e.g. from an Edge Function).
/// The platform's `stamp_created_at` trigger function, which the tables use,
/// is included as the platform writes it.
extension GreenBoxServer {
    var supabaseOptions: [(option: String, values: [String])] {
        [("pairing", ["prd", "codes"]), ("policies", ["prd", "strict"]), ("purge", ["pg_cron", "none"])]
    }

    func supabaseSQL(_ options: [String: String]) throws -> String {
        let pairing = options["pairing"] ?? "prd", policies = options["policies"] ?? "prd", purge = options["purge"] ?? "pg_cron"
        var parts = ["""
            -- Green Box (greenbox-prd.md) for a Supabase project, as Convoy load-tests it.
            -- Made by `convoy schema greenbox --pairing \(pairing) --policies \(policies) --purge \(purge)`:
            -- the SQL `convoy serve --database postgres://…` applies, with its clock, settings,
            -- Realtime triggers and purge loop swapped for now(), constants, the
            -- supabase_realtime publication and pg_cron (docs/supabase.md). Idempotent:
            -- apply it with `psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f greenbox.sql`, or
            -- paste it into the SQL editor.

            """]
        parts.append("-- Server-stamped creation times (what convoy serve's platform defines).\n"
                     + SupabaseSchema.portable(try SupabaseSchema.platformFunction("public.stamp_created_at")))
        let core = try Self.replacing(try Migrations.resource("001_greenbox.sql", folder: postgresFolder), Self.realtimeAttach,
                                      with: Self.publication(["friendships", "encrypted_locations"]))
        parts.append(SupabaseSchema.portable(core))
        parts.append(SupabaseSchema.portable(try Migrations.resource(policies == "strict" ? "002_strict_policies.sql" : "002_prd_policies.sql",
                                                                     folder: postgresFolder)))
        if pairing == "codes" {
            var codes = try Migrations.resource("003_invite_codes.sql", folder: postgresFolder)
            codes = try Self.replacing(codes, Self.settingsInsert, with: "")
            codes = try Self.replacing(codes, Self.settingsTTL, with: "'7 days'::interval")
            codes = try Self.replacing(codes, Self.invitesAttach, with: "")
            parts.append(SupabaseSchema.portable(codes))
        }
        if purge == "pg_cron" { parts.append(Self.cron) }
        return parts.joined(separator: "\n")
    }

    static let realtimeAttach = """
        DO $$ BEGIN
          PERFORM auth.attach_realtime(format('public.%I', t)::regclass, 'id')
             FROM unnest(ARRAY['users', 'friendships', 'encrypted_locations']) t;
        END $$;
        """
    static let settingsInsert = "INSERT INTO auth.convoy_settings VALUES ('invite_ttl', '7 days') ON CONFLICT (key) DO NOTHING;\n"
    static let settingsTTL = "coalesce((SELECT value FROM auth.convoy_settings WHERE key = 'invite_ttl'), '7 days')::interval"
    static let invitesAttach = """
        -- Realtime on invites (keyed by code).
        DO $$ BEGIN
          PERFORM auth.attach_realtime('public.invites'::regclass, 'code');
        END $$;

        """

    static func publication(_ tables: [String]) -> String {
        """
        DO $$ DECLARE t text; BEGIN
          FOREACH t IN ARRAY ARRAY[\(tables.map { "'\($0)'" }.joined(separator: ", "))] LOOP
            IF NOT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = 'supabase_realtime' AND schemaname = 'public' AND tablename = t) THEN
              EXECUTE format('ALTER PUBLICATION supabase_realtime ADD TABLE public.%I', t);
            END IF;
          END LOOP;
        END $$;
        """
    }

    /// The PRD's purge every minute (§3.3) as pg_cron runs it on Supabase.
    static let cron = SupabaseSchema.cronJob("Retention (PRD §3.3): the purge every minute, as pg_cron runs it on Supabase.",
                                             name: "purge-old-locations", schedule: "* * * * *",
                                             statement: "SELECT public.purge_old_locations('10 minutes')", every: "minute")

    /// `text` with `old` replaced; an error when `old` is not there (the SQL changed under this export).
    static func replacing(_ text: String, _ old: String, with new: String) throws -> String {
        guard text.contains(old) else { throw PostgresStoreError("Green Box's SQL changed: this export looks for \(old.prefix(60))…") }
        return text.replacingOccurrences(of: old, with: new)
    }
}
