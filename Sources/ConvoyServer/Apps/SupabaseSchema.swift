import Foundation

/// The SQL migration a user applies to their own Supabase project so that
/// Convoy can load-test it (`convoy schema APP`, docs/supabase.md): the app's
/// own SQL, the files `convoy serve --database postgres://…` applies, with
/// what only `convoy serve` has swapped for what Supabase has.
public enum SupabaseSchema {
    /// What can be wrong with a request for a schema, in words for the user.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// The options `app` takes (`--pairing prd|codes`, …), each with its values, the first the default.
    public static func options(of app: String) -> [(option: String, values: [String])]? {
        ServerApps.make(app)?.supabaseOptions
    }

    /// The migration for `app` with `options` (missing ones take their default).
    public static func sql(app: String, options: [String: String] = [:]) throws(Invalid) -> String {
        guard let server = ServerApps.make(app) else {
            throw Invalid(description: ServerApps.names.contains(app)
                ? "\(app) is not a Supabase app: it has no schema for a Supabase project (apps with one: \(ServerApps.supabaseNames.joined(separator: ", ")))"
                : "no app \"\(app)\" (apps: \(ServerApps.supabaseNames.joined(separator: ", ")))")
        }
        var chosen: [String: String] = [:]
        for (option, values) in server.supabaseOptions {
            let value = options[option] ?? values[0]
            guard values.contains(value) else {
                throw Invalid(description: "\(app) has no --\(option) \(value) (--\(option): \(values.joined(separator: ", ")))")
            }
            chosen[option] = value
        }
        if let unknown = options.keys.first(where: { chosen[$0] == nil }) {
            throw Invalid(description: "\(app) has no option --\(unknown)")
        }
        do {
            return try server.supabaseSQL(chosen)
        } catch {
            throw Invalid(description: "\(error)")
        }
    }

    /// A pg_cron job as a Supabase project schedules it, or a notice to run `statement` by hand where pg_cron is missing.
    static func cronJob(_ comment: String, name: String, schedule: String, statement: String, every: String) -> String {
        let quoted = statement.replacingOccurrences(of: "'", with: "''")
        return """
            -- \(comment)
            DO $$ BEGIN
              IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_cron') THEN
                CREATE EXTENSION IF NOT EXISTS pg_cron;
                PERFORM cron.schedule('\(name)', '\(schedule)', '\(quoted)');
              ELSE
                RAISE NOTICE 'pg_cron is not available here: run \(quoted) every \(every) yourself';
              END IF;
            END $$;

            """
    }

    /// What `convoy serve`'s platform gives an app's SQL that a Supabase project
    /// has otherwise: its clock (tests move it) becomes `now()`.
    static func portable(_ sql: String) -> String {
        sql.replacingOccurrences(of: "auth.now()", with: "now()")
    }

    /// A function of the platform's SQL (Storage/PostgreSQL/000_platform.sql) an app's SQL relies on, as written there.
    static func platformFunction(_ name: String) throws -> String {
        let text = try Migrations.resource("000_platform.sql", folder: "PostgreSQL")
        guard let start = text.range(of: "CREATE OR REPLACE FUNCTION \(name)("),
              let end = text.range(of: "END $$;\n", range: start.upperBound..<text.endIndex)
        else { throw PostgresStoreError("the platform's SQL has no function \(name)") }
        return String(text[start.lowerBound..<end.upperBound])
    }
}
