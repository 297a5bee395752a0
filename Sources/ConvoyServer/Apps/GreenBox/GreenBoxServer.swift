import ConvoyJSON
import ConvoyTime
import Foundation
import GRDB
import HTTPTypes

/// Green Box's backend (greenbox-prd.md §3 and §5.2–5.3): users with their
/// public keys, friendships with each side's sharing preference, opaque
/// `encrypted_locations` rows readable by their recipient only, invite codes,
/// and the 10-minute retention purge with its log. The only place in
/// ConvoyServer that names its tables, columns and RPCs.
struct GreenBoxServer: SupabaseServerKind {
    static let appName = "greenbox"
    let name = Self.appName

    var schema: Schema { Self.schema }

    func policies(strict: Bool) -> Policies { Self.policies(strict: strict) }

    var sqliteMigrations: [SQLiteMigration] {
        [SQLiteMigration(identifier: "greenbox v1: the PRD's tables", sql: Self.tables.sqliteScript)]
    }

    /// `create_invite` and `accept_invite`, for signed-in users only (PostgreSQL
    /// grants them to `authenticated` alone); `purge_old_locations(retention)`, for the service role alone (as
    /// PostgreSQL grants it), so that a probe can show the rightful caller reaches it before a user is refused.
    func rpcRefusal(_ name: String, as who: Principal) -> APIError? {
        switch name {
        case "purge_old_locations": who.role == .serviceRole ? nil : Self.noExecute(name, who)
        case "create_invite", "accept_invite": who.role == .authenticated ? nil : Self.noExecute(name, who)
        default: nil
        }
    }

    func rpc(_ name: String, _ args: [String: JSONValue], as who: Principal, in context: SQLiteAppContext) async throws -> JSONValue? {
        if name == "purge_old_locations" {
            let retention = try Self.interval(args["retention"]?.flatText ?? "10 minutes")
            let now = context.clock.date
            return .number(String(try await purge(before: now.addingTimeInterval(-retention), now: now, in: context)))
        }
        guard name == "create_invite" || name == "accept_invite" else { return nil }
        guard let uid = who.userID else { throw Self.noExecute(name, who) }
        let invites = InviteRPC(store: context.store, clock: context.clock, ttl: context.configuration.inviteTTL)
        let row = name == "create_invite" ? try await invites.create(args, as: uid) : try await invites.accept(args, as: uid)
        return Values.object(row)
    }

    /// A PostgreSQL interval as `purge_old_locations` takes it, in seconds: `N unit` pairs (`10 minutes`, `1 hour 30 mins`,
    /// `100 years`); anything else is PostgreSQL's 22007.
    static func interval(_ text: String) throws(APIError) -> Double {
        let units: [String: Double] = ["second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "day": 86_400, "week": 604_800,
                                       "month": 2_592_000, "year": 31_557_600]
        let words = text.lowercased().split(whereSeparator: \.isWhitespace).map(String.init)
        var total = 0.0
        guard !words.isEmpty, words.count % 2 == 0 else { throw .postgrest(.badRequest, "22007", "invalid input syntax for type interval: \"\(text)\"") }
        for i in stride(from: 0, to: words.count, by: 2) {
            let unit = words[i + 1].hasSuffix("s") && units[String(words[i + 1].dropLast())] != nil ? String(words[i + 1].dropLast()) : words[i + 1]
            guard let n = Double(words[i]), n.isFinite, let seconds = units[unit] else {
                throw .postgrest(.badRequest, "22007", "invalid input syntax for type interval: \"\(text)\"")
            }
            total += n * seconds
        }
        return total
    }

    /// The PRD's `purge-old-locations`: `encrypted_locations` older than the
    /// retention go, and the run is kept in `purge_log`. One statement, not
    /// row by row: on SQLite the purge sends no Realtime DELETEs
    /// (docs/server.md, "Known gaps").
    func purge(before cutoff: Date, now: Date, in context: SQLiteAppContext) async throws -> Int {
        let (cut, stamp) = (Timestamps.format(cutoff), Timestamps.format(now))
        return try await context.store.write(at: stamp) { tx in
            try tx.db.execute(sql: "DELETE FROM encrypted_locations WHERE created_at < ?", arguments: [cut])
            let n = tx.db.changesCount
            try tx.db.execute(sql: "INSERT INTO purge_log (ran_at, deleted, cutoff) VALUES (?, ?, ?)", arguments: [stamp, n, cut])
            return n
        }
    }

    // MARK: PostgreSQL

    let postgresFolder = Self.folder

    let postgresFiles = Self.files

    /// `--strict-policies`: locations may be posted to active friends only
    /// (the PRD lets users post to anyone, as themselves).
    func postgresChoices(_ configuration: ServerConfiguration) -> [PostgresChoice] {
        let strict = configuration.strictPolicies
        return [PostgresChoice(setting: "location_insert_policy", initial: "prd", wanted: strict ? "strict" : "prd",
                               file: strict ? "002_strict_policies.sql" : "002_prd_policies.sql")]
    }

    /// How long invite codes live (`create_invite` reads it).
    func postgresSettings(_ configuration: ServerConfiguration) -> [String: String] {
        ["invite_ttl": "\(configuration.inviteTTL) seconds"]
    }

    /// Its `purge_old_locations`, or where the database has none (the PRD's own DDL, `--app-schema database`), what PRD
    /// §3.3's Edge Function runs: `DELETE FROM encrypted_locations WHERE created_at < NOW() - INTERVAL …`.
    func postgresPurge(retention: Double, has: (String) -> Bool) -> String {
        let window = "make_interval(secs => \(retention))"
        return has("purge_old_locations") ? "SELECT public.purge_old_locations(\(window))::text"
            : "WITH gone AS (DELETE FROM public.encrypted_locations WHERE created_at < now() - \(window) RETURNING 1) SELECT count(*)::text FROM gone"
    }
}
