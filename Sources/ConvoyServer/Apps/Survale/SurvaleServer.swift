import ConvoyJSON
import ConvoyTime
import Foundation
import GRDB
import HTTPTypes
import PostgresNIO

/// Survale's backend (survale-spec.md): agencies, teams and their users;
/// operations (draft → active → ended) with members, invites and join
/// requests, targets and staging areas; operation chat and the location
/// archive; row-level security on all of them and on the operations' private
/// Realtime channels (`op_{id}_locations`, `op_{id}_chat`); the lifecycle RPCs;
/// auto-end after `--auto-end` with every member off the channels; the purge
/// of everything of an operation `--retention` (7 days) after it ended. The
/// only place in ConvoyServer that names its tables, channels and RPCs.
struct SurvaleServer: SupabaseServerKind {
    static let appName = "survale"
    let name = Self.appName

    var schema: Schema { Self.schema }

    func policies(strict: Bool) -> Policies { Self.policies() }

    var sqliteMigrations: [SQLiteMigration] {
        [SQLiteMigration(identifier: "survale v1: agencies, teams, operations, chat and archive", sql: Self.tables.sqliteScript),
         SQLiteMigration(identifier: "survale v1: the op-media bucket", sql: Self.mediaBucket, afterPlatform: true),
         SQLiteMigration(identifier: "survale v2: one pending join request a member (a member who left may ask again)",
                         sql: Self.joinRequestsAgain)]
    }

    func rpcRefusal(_ name: String, as who: Principal) -> APIError? {
        SurvaleRPC.names.contains(name) && who.role != .authenticated ? Self.noExecute(name, who) : nil
    }

    func rpc(_ name: String, _ args: [String: JSONValue], as who: Principal, in context: SQLiteAppContext) async throws -> JSONValue? {
        guard SurvaleRPC.names.contains(name) else { return nil }
        guard let uid = who.userID else { throw Self.noExecute(name, who) }
        return try await SurvaleRPC(store: context.store, clock: context.clock).call(name, args, as: uid)
    }

    func realtimeAllows(_ action: ChannelAction, _ ext: RealtimeExtension, topic: String, as who: Principal, in db: Database) throws -> Bool {
        try Self.realtimeAllows(action, ext, topic: topic, as: who, in: db)
    }

    /// `purge_ended_operations`: every operation ended before `cutoff`, with its
    /// archive, chat, targets, staging areas, requests, invites, members and
    /// media (rows and bytes), logged in `purge_log` (the media not counted there). One statement per table: on
    /// SQLite the purge sends no Realtime DELETEs.
    func purge(before cutoff: Date, now: Date, in context: SQLiteAppContext) async throws -> Int {
        let (cut, stamp) = (Timestamps.format(cutoff), Timestamps.format(now))
        let ended = try await context.store.pool.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM operations WHERE status = 'ended' AND ended_at < ?", arguments: [cut])
        }
        // Their media first (rows and bytes): a purge cut short leaves no object of a deleted operation.
        var media = 0
        for op in ended { media += try await context.removeObjects(bucket: Self.mediaBucketID, prefix: "\(op)/") }
        return media + (try await context.store.write(at: stamp) { tx in
            let ended = "SELECT id FROM operations WHERE status = 'ended' AND ended_at < ?"
            var n = 0
            let dependents = ["locations_archive", "op_messages", "targets", "staging_areas", "join_requests", "operation_invites", "operation_members"]
            for sql in dependents.map({ "DELETE FROM \($0) WHERE operation_id IN (\(ended))" }) + ["DELETE FROM operations WHERE id IN (\(ended))"] {
                try tx.db.execute(sql: sql, arguments: [cut])
                n += tx.db.changesCount
            }
            try tx.db.execute(sql: "INSERT INTO purge_log (ran_at, deleted, cutoff) VALUES (?, ?, ?)", arguments: [stamp, n, cut])
            return n
        })
    }

    var defaultRetention: Double { 7 * 86_400 }

    // MARK: Auto-end

    /// Often enough that an operation ends within a twentieth of the auto-end time after it is due (at most every 5 s).
    func housekeepingEvery(_ configuration: ServerConfiguration) -> Double? {
        min(5, configuration.autoEndAfter / 20)
    }

    /// `survale_auto_end`: operations with someone on their channels are not idle; the others are idle
    /// from now if they were not; one idle for the auto-end time ends.
    func housekeeping(_ context: HousekeepingContext) async throws -> [String] {
        let connected = Set(context.channelUsers().compactMap { name, users in users.isEmpty ? nil : Self.operation(ofTopic: name) })
        let idle = context.configuration.autoEndAfter
        let ended: [String]
        if let pg = context.postgres {
            var binds = PostgresBindings()
            binds.append(connected.sorted())
            binds.append(idle)
            let text = try await pg.transaction { c in
                try await PostgresStore.text(c, PostgresQuery(unsafeSQL: "SELECT public.survale_auto_end($1::uuid[], $2)::text", binds: binds),
                                             logger: pg.logger)
            }
            ended = text.flatMap { JSONScanner.parse($0)?.strings } ?? []
        } else if let sqlite = context.sqlite {
            ended = try await Self.autoEnd(connected: connected, idle: idle, store: sqlite.store, now: sqlite.clock.date)
        } else {
            ended = []
        }
        return ended.map { "auto-end: operation \($0) ended, every member off its channels for \(Int(idle)) s" }
    }

    static func autoEnd(connected: Set<String>, idle: Double, store: Store, now: Date) async throws -> [String] {
        try await store.write(at: Timestamps.format(now)) { tx in
            var ended: [String] = []
            let active = try GRDB.Row.fetchAll(tx.db, sql: "SELECT rowid AS _rowid, * FROM operations WHERE status = 'active'")
            for row in active {
                let o = SurvaleRPC.operations.values(of: row)
                let id: String = row["id"]
                let since = (row["idle_since"] as String?).flatMap { Timestamps.parse($0) }
                if connected.contains(id) {
                    if since != nil { _ = try SurvaleRPC.updated(SurvaleRPC.operations, row["_rowid"], o, ["idle_since": .null], tx) }
                } else if let since {
                    if since <= now.addingTimeInterval(-idle) {
                        _ = try SurvaleRPC.end((o, row["_rowid"]), reason: "auto_end", tx)
                        ended.append(id)
                    }
                } else {
                    _ = try SurvaleRPC.updated(SurvaleRPC.operations, row["_rowid"], o, ["idle_since": tx.now.databaseValue], tx)
                }
            }
            return ended
        }
    }

    // MARK: PostgreSQL

    let postgresFolder = Self.folder

    let postgresFiles = Self.files

    func postgresChoices(_ configuration: ServerConfiguration) -> [PostgresChoice] { [] }

    func postgresSettings(_ configuration: ServerConfiguration) -> [String: String] { [:] }

    func postgresPurge(retention: Double, has: (String) -> Bool) -> String {
        "SELECT public.purge_ended_operations(make_interval(secs => \(retention)))::text"
    }
}

extension SurvaleServer {
    static func refuse(_ configuration: ServerConfiguration) throws(ServerConfiguration.Invalid) {
        try ServerConfiguration.check("auto-end time", configuration.autoEndAfter, from: 1e-3)
    }
}

/// Survale's settings, as `convoy serve --app survale` is told them.
extension ServerConfiguration {
    /// An active operation whose members have all been off its channels this long ends, seconds (`--auto-end`; 10 minutes).
    public var autoEndAfter: Double {
        get { appSettings["auto-end"] ?? 600 }
        set { appSettings["auto-end"] = newValue }
    }
}
