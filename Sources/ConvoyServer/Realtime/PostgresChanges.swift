import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Realtime in PostgreSQL mode: every committed change arrives on
/// `LISTEN convoy_changes` (a trigger on each public table sends its table,
/// type, commit time and key), whoever made it. Changes are handled in
/// batches, in commit order: the rows of a batch are read with one query per
/// table, routed through the hub's filter index, and PostgreSQL decides in one
/// call which subscribers' roles and claims may SELECT each row
/// (`auth.readers`), as Supabase checks RLS per subscriber.
struct PostgresChanges: Sendable {
    let store: PostgresStore
    let hub: RealtimeHub
    /// Most notifications handled in one batch.
    static let batchLimit = 1000

    /// Listens until cancelled; reconnects after 1, 2, 5, then every 10 s.
    /// Changes committed while disconnected are not replayed.
    func run() async {
        let inbox = Inbox()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await listen(into: inbox) }
            group.addTask {
                while let batch = await inbox.take(upTo: Self.batchLimit) { await handle(batch) }
            }
            await group.next()
            inbox.close()
            group.cancelAll()
        }
    }

    private func listen(into inbox: Inbox) async {
        let failures = Mutex(0)
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: "convoy_changes") { notifications in
                        failures.withLock { $0 = 0 }
                        for try await n in notifications { inbox.put(n.payload) }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                store.logger.error("realtime: LISTEN convoy_changes failed", metadata: ["error": "\(PostgresStore.describe(error))"])
            }
            let backoff = [1.0, 2, 5, 10][min(failures.withLock { $0 }, 3)]
            failures.withLock { $0 += 1 }
            try? await Task.sleep(for: .seconds(backoff))
        }
    }

    struct Notice: Decodable {
        var table: String
        var type: String
        var commit_timestamp: String
        var key: Key

        /// A key as JSON gives it: text (uuid, text) or a number (bigint).
        struct Key: Decodable {
            var text: String
            init(from decoder: any Decoder) throws {
                let c = try decoder.singleValueContainer()
                if let s = try? c.decode(String.self) { text = s } else { text = String(try c.decode(Int64.self)) }
            }
        }
    }

    /// Routes a batch of notifications, in order.
    func handle(_ payloads: [String]) async {
        let decoder = JSONDecoder()
        let notices = payloads.compactMap { payload -> (Notice, Schema.Table, Schema.Column)? in
            guard let n = try? decoder.decode(Notice.self, from: Data(payload.utf8)),
                  let t = store.schema.tables[n.table], !t.primaryKey.isEmpty, let key = t.column(t.primaryKey),
                  hub.hasSubscribers(table: n.table)
            else { return nil }
            return (n, t, key)
        }
        guard !notices.isEmpty else { return }
        do {
            // The rows, one query per table: table → key → row.
            var rows: [String: [String: [String: Any]]] = [:]
            for (table, group) in Dictionary(grouping: notices.filter { $0.0.type != "DELETE" }, by: { $0.1.name }) {
                let key = group[0].2
                let sql = """
                    SELECT \(Schema.quote(key.name))::text, row_to_json(r)::text FROM public.\(Schema.quote(table)) r
                    WHERE \(Schema.quote(key.name)) = ANY($1::text[]::\(key.type.postgresName)[])
                    """
                var binds = PostgresBindings()
                binds.append(Array(Set(group.map(\.0.key.text))))
                for try await (k, json) in try await store.client.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: store.logger)
                    .decode((String, String).self) {
                    rows[table, default: [:]][k] = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
                }
            }
            // Each change and the subscribers its bindings match.
            var routed: [(ChangeEvent, [RealtimeHub.Delivery], Notice, Schema.Column)] = []
            for (n, t, key) in notices {
                let keyJSON: Any = key.type == .bigint ? (Int64(n.key.text) as Any? ?? n.key.text) : n.key.text
                let change: ChangeEvent
                if n.type == "DELETE" {
                    // The row is gone: as Supabase sends it, the old record is its key.
                    change = ChangeEvent(table: t.name, type: "DELETE", recordJSON: [:], oldRecordJSON: [key.name: keyJSON],
                                         commitTimestamp: n.commit_timestamp)
                } else {
                    // Deleted since: a later notice says so. Changed since: the current row is sent.
                    guard let record = rows[t.name]?[n.key.text] else { continue }
                    change = ChangeEvent(table: t.name, type: n.type, recordJSON: record,
                                         oldRecordJSON: n.type == "UPDATE" ? [key.name: keyJSON] : [:], commitTimestamp: n.commit_timestamp)
                }
                let candidates = hub.route(change)
                if !candidates.isEmpty { routed.append((change, candidates, n, key)) }
            }
            guard !routed.isEmpty else { return }
            // One RLS check per (row, subscriber), one call per table. A DELETE has no
            // row left to check: as on Supabase it goes to the signed-in subscribers it matched.
            var checks: [String: (keys: [String], claims: [String], owners: [(change: Int, candidate: Int)])] = [:]
            for (i, (change, candidates, n, _)) in routed.enumerated() where change.type != "DELETE" {
                for (j, d) in candidates.enumerated() {
                    checks[change.table, default: ([], [], [])].keys.append(n.key.text)
                    checks[change.table, default: ([], [], [])].claims.append(d.member.principal.claimsJSON)
                    checks[change.table, default: ([], [], [])].owners.append((i, j))
                }
            }
            var allowed: [(change: Int, candidate: Int)] = []
            for (table, batch) in checks {
                let positions: Set<Int>
                do {
                    positions = try await readers(table, batch.keys, batch.claims, guarded: false)
                } catch {
                    // A check failed (a missing grant, a broken policy): again, each check on its own.
                    positions = try await readers(table, batch.keys, batch.claims, guarded: true)
                }
                allowed += positions.map { batch.owners[$0 - 1] }
            }
            var pass: [Int: [Int]] = [:]
            for owner in allowed { pass[owner.change, default: []].append(owner.candidate) }
            for (i, (change, candidates, _, _)) in routed.enumerated() {
                if change.type == "DELETE" {
                    hub.deliver(change, to: candidates.filter { $0.member.principal.role != .anon })
                } else {
                    hub.deliver(change, to: (pass[i] ?? []).map { candidates[$0] })
                }
            }
        } catch {
            store.logger.error("realtime: cannot route \(notices.count) changes", metadata: ["error": "\(PostgresStore.describe(error))"])
        }
    }
}

extension PostgresChanges {
    /// The positions (1-based) of the checks whose claims may read their row of `table` (`auth.readers`).
    func readers(_ table: String, _ keys: [String], _ claims: [String], guarded: Bool) async throws -> Set<Int> {
        var binds = PostgresBindings()
        binds.append("public.\(Schema.quote(table))")
        binds.append(keys)
        binds.append(claims)
        binds.append(guarded)
        var out = Set<Int>()
        let sql = "SELECT auth.readers($1::regclass, $2, $3::jsonb[], $4)"
        for try await (i,) in try await store.client.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: store.logger).decode((Int32,).self) {
            out.insert(Int(i))
        }
        return out
    }
}

/// Notifications waiting to be handled: the listener puts, the router takes
/// everything there is (up to a limit) each time it wakes.
final class Inbox: Sendable {
    private struct State {
        var items: [String] = []
        var waiter: CheckedContinuation<Void, Never>?
        var closed = false
    }
    private let state = Mutex(State())

    func put(_ item: String) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.items.append(item)
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    func close() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.closed = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// The next items, waiting for at least one; nil once closed.
    func take(upTo limit: Int) async -> [String]? {
        while true {
            if let batch = state.withLock({ s -> [String]? in
                guard !s.items.isEmpty else { return nil }
                let n = min(limit, s.items.count)
                defer { s.items.removeFirst(n) }
                return Array(s.items.prefix(n))
            }) {
                return batch
            }
            if state.withLock({ $0.closed }) || Task.isCancelled { return nil }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if !s.items.isEmpty || s.closed { return true }
                    s.waiter = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        }
    }
}
