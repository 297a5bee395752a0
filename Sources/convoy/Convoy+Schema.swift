import ArgumentParser
import ConvoyServer
import Foundation

extension Convoy {
    /// `convoy schema APP`: the SQL migration for the user's own Supabase project.
    struct Schema: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the SQL migration that makes your Supabase project one Convoy can load-test.",
            discussion: """
                Prints APP's tables, row-level security, RPCs and retention purge as one idempotent migration for a \
                Supabase project built to the app's spec: the same SQL `convoy serve --database postgres://…` applies, \
                with what only convoy serve has (its clock, its settings table, its Realtime triggers, its purge loop) \
                swapped for now(), constants, the supabase_realtime publication and a pg_cron job. Apply it with \
                psql -v ON_ERROR_STOP=1 -f, or paste it into the SQL editor; docs/supabase.md walks through the rest \
                (auth settings, keys, what a run creates). Options an app does not have, or values it does not take, \
                are bad input (exit 2).

                greenbox: --pairing prd (default: the PRD's pending friendship the invitee activates) or codes \
                (adds the invites table and create_invite/accept_invite, for scenarios with pairing: codes); \
                --policies prd (default: users may post locations to anyone, as themselves) or strict (to active \
                friends only); --purge pg_cron (default: every minute) or none.
                """)

        @Argument(help: "The app: \(ServerApps.supabaseNames.joined(separator: ", ")).")
        var app: String

        @Option(help: "How friends pair (greenbox: prd, codes).")
        var pairing: String?

        @Option(help: "Which insert policy for locations (greenbox: prd, strict).")
        var policies: String?

        @Option(help: "How the retention purge runs (greenbox: pg_cron, none).")
        var purge: String?

        @Option(help: "Write the SQL to this file instead of standard output.")
        var out: String?

        func run() throws {
            var options: [String: String] = [:]
            for (name, value) in [("pairing", pairing), ("policies", policies), ("purge", purge)] {
                if let value { options[name] = value }
            }
            let sql: String
            do {
                sql = try SupabaseSchema.sql(app: app, options: options)
            } catch {
                throw CommandFailure.badInput(error.description)
            }
            guard let out else {
                print(sql, terminator: "")
                return
            }
            do {
                try sql.write(toFile: out, atomically: true, encoding: .utf8)
            } catch {
                throw CommandFailure.runtime("cannot write \(out): \(error.localizedDescription)")
            }
            print(out)
        }
    }
}
