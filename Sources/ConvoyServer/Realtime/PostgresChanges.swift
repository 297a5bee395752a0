import ConvoyJSON
import ConvoyTime
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// Realtime in PostgreSQL mode: every committed change arrives on
/// `LISTEN convoy_changes` (a trigger on each public table sends its table,
/// type, commit time and key), whoever made it. Changes are handled in
/// batches, in commit order: the rows of a batch are read once per table and
/// handed to the change feed, which routes them through the hub's filter
/// index and has them read again as each matching subscriber (this type's
/// `auth.readers`), so PostgreSQL's RLS decides what each subscriber gets, as
/// Supabase checks each one.
struct PostgresChanges: Service, SubscriberReader {
    let store: PostgresStore
    let feed: ChangeFeed
    /// Called each time LISTEN is in place.
    let listening: @Sendable () -> Void
    /// Most notifications handled in one batch.
    static let batchLimit = 1000
    /// Most notifications waiting; beyond it the oldest are dropped (and logged).
    static let backlogLimit = 200_000

    /// Listens until a graceful shutdown or cancellation, on a connection of
    /// its own (not the pool's); reconnects after 1, 2, 5, then every 10 s.
    /// Changes committed while disconnected are not replayed.
    func run() async {
        await cancelWhenGracefulShutdown { await listenAndRoute() }
    }

    private func listenAndRoute() async {
        let inbox = Inbox(limit: Self.backlogLimit)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await listen(into: inbox) }
            group.addTask {
                while let batch = await inbox.take(upTo: Self.batchLimit) {
                    if batch.dropped > 0 {
                        store.logger.error("realtime: backlog over \(Self.backlogLimit) changes; dropped the \(batch.dropped) oldest")
                    }
                    await handle(batch.items)
                }
            }
            await group.next()
            inbox.close()
            group.cancelAll()
        }
    }

    private func listen(into inbox: Inbox) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(configuration: store.connection, id: 1, logger: store.logger)
                failures = 0
                do {
                    try await connection.listen(on: "convoy_changes") { notifications in
                        listening()
                        for try await n in notifications { inbox.put(n.payload) }
                    }
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch {
                if Task.isCancelled { return }
                store.logger.error("realtime: LISTEN convoy_changes failed", metadata: ["error": "\(PostgresStore.describe(error))"])
            }
            let backoff = [1.0, 2, 5, 10][min(failures, 3)]
            failures += 1
            try? await Task.sleep(for: .seconds(backoff))
        }
    }

    /// One notification: `{table, type, commit_timestamp, key, key_text}`.
    struct Notice {
        var table: String
        var type: String
        var commitTimestamp: String
        /// The key as JSON (for `old_record`) and as the text rows are matched by.
        var key: JSONValue
        var keyText: String

        init?(_ payload: String) {
            guard let o = JSONScanner.parse(payload), let table = o["table"]?.string, let type = o["type"]?.string,
                  let commit = o["commit_timestamp"]?.string, let key = o["key"], let keyText = o["key_text"]?.string
            else { return nil }
            (self.table, self.type, commitTimestamp, self.key, self.keyText) = (table, type, commit, key, keyText)
        }
    }

    /// Routes a batch of notifications, in order, table by table (a table that
    /// fails to route loses its changes of this batch, not the others').
    func handle(_ payloads: [String]) async {
        var byTable: [String: [Notice]] = [:]
        var order: [String] = []
        for payload in payloads {
            guard let n = Notice(payload), store.schema.tables[n.table].map({ !$0.primaryKey.isEmpty }) == true,
                  feed.hasSubscribers(table: n.table)
            else { continue }
            if byTable[n.table] == nil { order.append(n.table) }
            byTable[n.table, default: []].append(n)
        }
        for table in order {
            guard let t = store.schema.tables[table], let key = t.column(t.primaryKey), let notices = byTable[table] else { continue }
            do {
                try await route(notices, t, key)
            } catch {
                store.logger.error("realtime: cannot route \(notices.count) changes", metadata: [
                    "table": "\(table)", "error": "\(PostgresStore.describe(error))"])
            }
        }
    }

    /// One table's changes: read the rows (as the server) for the feed to
    /// route, and let it have them read again as each matching subscriber.
    private func route(_ notices: [Notice], _ t: Schema.Table, _ key: Schema.Column) async throws {
        var current: [String: String] = [:]
        let live = Array(Set(notices.filter { $0.type != "DELETE" }.map(\.keyText)))
        if !live.isEmpty {
            let sql = """
                SELECT to_json(r.\(Schema.quote(key.name))) #>> '{}', row_to_json(r)::text FROM public.\(Schema.quote(t.name)) r
                WHERE r.\(Schema.quote(key.name)) = ANY($1::text[]::\(key.type.postgresName)[])
                """
            var binds = PostgresBindings()
            binds.append(live)
            current = try await store.client.withConnection { c in
                var rows: [String: String] = [:]
                for try await (k, json) in try await c.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: store.logger)
                    .decode((String, String).self) {
                    rows[k] = json
                }
                return rows
            }
        }
        var announced: [ChangeFeed.Announced] = []
        for n in notices {
            if n.type == "DELETE" {
                // The row is gone: as Supabase sends it, the old record is its key.
                let change = ChangeEvent(table: t.name, type: "DELETE", recordJSON: [:], oldRecordJSON: .object([.init(key.name, n.key)]),
                                         commitTimestamp: n.commitTimestamp)
                announced.append(.init(change: change, keyText: n.keyText, json: nil))
                continue
            }
            // Deleted since: a later notice says so.
            guard let json = current[n.keyText], let record = Self.object(json) else { continue }
            let change = ChangeEvent(table: t.name, type: n.type, recordJSON: record,
                                     oldRecordJSON: n.type == "UPDATE" ? .object([.init(key.name, n.key)]) : [:], commitTimestamp: n.commitTimestamp)
            announced.append(.init(change: change, keyText: n.keyText, json: json))
        }
        try await feed.publish(announced, of: t.name, reader: self)
    }

    static func object(_ json: String) -> JSONValue? {
        guard let value = PostgresTables.parse(json), case .object = value else { return nil }
        return value
    }
}

extension PostgresChanges {
    /// Position (1-based) → the row as that subscriber's claims may read it (`auth.readers`).
    func read(_ table: String, keys: [String], as subscribers: [Principal], guarded: Bool) async throws -> [Int: String] {
        var binds = PostgresBindings()
        binds.append("public.\(Schema.quote(table))")
        binds.append(keys)
        binds.append(subscribers.map(\.claimsJSON))
        binds.append(Timestamps.format(store.clock.date))
        binds.append(guarded)
        let sql = "SELECT pos, row_json FROM auth.readers($1::regclass, $2, $3::jsonb[], $4, $5)"
        // A connection leased for the read alone, back in the pool however it ends: a read that
        // fails (a column the subscriber may not see) kept its connection now and then, and the
        // guarded read after it then waited for ever on a pool of one.
        return try await store.client.withConnection { c in
            var out: [Int: String] = [:]
            for try await (i, json) in try await c.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: store.logger)
                .decode((Int32, String).self) {
                out[Int(i)] = json
            }
            return out
        }
    }

    func roles(_ roles: Set<Principal.Role>, maySelect table: String) async throws -> Set<Principal.Role> {
        var allowed = Set<Principal.Role>()
        for role in roles {
            var binds = PostgresBindings()
            binds.append(role.rawValue)
            binds.append("public.\(Schema.quote(table))")
            let ok = try await store.client.withConnection { c in
                for try await (ok,) in try await c.query(
                    PostgresQuery(unsafeSQL: "SELECT has_table_privilege($1, $2::regclass, 'SELECT')", binds: binds), logger: store.logger
                ).decode((Bool,).self) {
                    return ok
                }
                return false
            }
            if ok { allowed.insert(role) }
        }
        return allowed
    }
}
