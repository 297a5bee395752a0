import ConvoyJSON
import ConvoyTime
import Foundation
import GRDB
import HTTPTypes

/// An app's backend, as `convoy serve --app NAME` serves it: its tables, their
/// row-level security, its RPCs and its retention purge, for both stores. The
/// platform around it (auth, PostgREST, Realtime, the stores) names none of
/// them; each app implements this in a folder of its own (`Apps/GreenBox/`).
///
/// With SQLite the platform enforces the app's policies in Swift and calls the
/// app's Swift RPCs and purge; with PostgreSQL the app's SQL does all of it
/// (its policies, `SECURITY DEFINER` functions for its RPCs and purge), and
/// the platform reads the schema from the database.
protocol ServerApp: Sendable {
    /// Its name for `--app`.
    var name: String { get }

    // MARK: SQLite

    /// Its tables as the SQLite store serves them.
    var schema: Schema { get }
    /// Its row-level security on SQLite, mirroring its PostgreSQL policies;
    /// `strict` is `--strict-policies`.
    func policies(strict: Bool) -> Policies
    /// Its tables' DDL on SQLite, applied in order after the auth tables, each
    /// once (recorded by its identifier) and idempotent (`IF NOT EXISTS`).
    var sqliteMigrations: [SQLiteMigration] { get }
    /// Why `who` may not call RPC `name` at all (PostgreSQL: no EXECUTE grant to its role, 42501), checked before its
    /// arguments are read, as PostgreSQL checks the grant before it evaluates them; nil when it may.
    func rpcRefusal(_ name: String, as who: Principal) -> APIError?
    /// RPC `name` on the SQLite store, run as the server (PostgreSQL:
    /// `SECURITY DEFINER`), its checks explicit; nil when the app has no RPC of that name. The store has checked
    /// `rpcRefusal` first (`SQLiteTables.rpc`, its one caller).
    func rpc(_ name: String, _ args: [String: JSONValue], as who: Principal, in context: SQLiteAppContext) async throws -> JSONValue?
    /// Its retention purge on SQLite: rows created before `cutoff` go, the run
    /// is logged; returns how many rows went.
    func purge(before cutoff: Date, now: Date, in context: SQLiteAppContext) async throws -> Int
    /// How often its housekeeping runs (Survale: auto-end), seconds; nil: it has none
    /// (`ServerApp+Housekeeping.swift`).
    func housekeepingEvery(_ configuration: ServerConfiguration) -> Double?
    /// One round of housekeeping, on either store; what it did, in lines for the log.
    func housekeeping(_ context: HousekeepingContext) async throws -> [String]
    /// What `--retention` is unless given, seconds (Green Box: 10 minutes).
    var defaultRetention: Double { get }
    /// Realtime Authorization on SQLite: whether `who` may `action` (read: join
    /// and receive; write: send or track) `ext` messages on the private channel
    /// `topic`, mirroring the app's policies on `realtime.messages` (where
    /// `realtime.topic()` is `topic`); the service role never asks. Default:
    /// nothing is allowed (`ServerApp+Realtime.swift`).
    func realtimeAllows(_ action: ChannelAction, _ ext: RealtimeExtension, topic: String, as who: Principal,
                        in db: Database) throws -> Bool
    var storagePolicy: StoragePolicy { get }  // its RLS on storage.objects (ServerApp+Storage.swift; default: none)

    // MARK: PostgreSQL

    /// The bundle folder its SQL files are in (named after the app: every
    /// target's resources share one bundle).
    var postgresFolder: String { get }
    /// Its schema, policies, RPC and purge functions, applied in order after
    /// the platform's SQL, each once (again when a build changes it).
    var postgresFiles: [String] { get }
    /// What the configuration chooses among its policies, each choice applied at start when it changed.
    func postgresChoices(_ configuration: ServerConfiguration) -> [PostgresChoice]
    /// Settings its SQL reads from `auth.convoy_settings`, written at each start.
    func postgresSettings(_ configuration: ServerConfiguration) -> [String: String]
    /// Its purge as one statement, given the retention in seconds, run as the
    /// server; its one value (text) is how many rows went. `has(name)`: whether the
    /// database has function `public.name` (with `--app-schema database` the schema
    /// is the user's, and may have none of the app's functions).
    func postgresPurge(retention: Double, has: (String) -> Bool) -> String

    // MARK: A Supabase project of the user's (`convoy schema`)

    /// The options `convoy schema` takes for it, each with its values, the first the default.
    var supabaseOptions: [(option: String, values: [String])] { get }
    /// Its PostgreSQL files as a migration for a Supabase project, for `options` (every option given).
    func supabaseSQL(_ options: [String: String]) throws -> String
}

extension ServerApp {
    /// Every RPC is granted to every role unless the app says otherwise.
    func rpcRefusal(_ name: String, as who: Principal) -> APIError? { nil }

    /// PostgreSQL's refusal of a function its role has no EXECUTE grant on (401 for anon, as PostgREST maps it).
    static func noExecute(_ name: String, _ who: Principal) -> APIError {
        .postgrest(who.role == .anon ? .unauthorized : .forbidden, "42501", "permission denied for function \(name)")
    }

    /// Its RPCs' signatures on SQLite, read from the heads of the functions in its PostgreSQL SQL, so that the two
    /// stores cannot drift.
    var rpcSignatures: [String: RPCSignature] {
        var out: [String: RPCSignature] = [:]
        for file in postgresFiles {
            guard let text = try? Migrations.resource(file, folder: postgresFolder) else { continue }
            out.merge(RPCSignature.read(script: text)) { $1 }
        }
        return out
    }
}

/// One of an app's SQLite migrations: its identifier (GRDB records it) and its DDL.
struct SQLiteMigration: Sendable {
    var identifier: String
    var sql: String
    /// Applied after the platform's own tables (Storage's buckets, say), not before them.
    var afterPlatform = false
}

/// A choice among an app's PostgreSQL policies (`--strict-policies`), kept in
/// `auth.convoy_settings` so a start that wants what the database has applies nothing.
struct PostgresChoice: Sendable {
    /// Its key in `auth.convoy_settings`.
    var setting: String
    /// The value the app's files leave it at.
    var initial: String
    /// The value this start wants, and the file (in the app's folder) that sets it.
    var wanted: String
    var file: String
}

/// What an app's Swift half (its SQLite RPCs and purge) works with: it writes
/// rows through `store.write`'s transaction, so Realtime hears of them as of
/// any other write (the app never talks to the hub).
struct SQLiteAppContext: Sendable {
    let store: Store
    let clock: any ConvoyClock
    let configuration: ServerConfiguration
}
