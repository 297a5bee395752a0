import Foundation
import Logging
import PostgresNIO

/// Realtime in PostgreSQL mode: every committed change arrives on
/// `LISTEN convoy_changes` (a trigger on each public table sends its table,
/// type, commit time and key), whoever made it. For each change with
/// subscribers this reads the row, routes it through the hub's filter index,
/// and asks PostgreSQL which of those subscribers' roles and claims may SELECT
/// it (`auth.readers`), as Supabase checks RLS per subscriber.
struct PostgresChanges: Sendable {
    let store: PostgresStore
    let hub: RealtimeHub

    /// Listens until cancelled; reconnects after 1, 2, 5, then every 10 s.
    /// Changes committed while disconnected are not replayed.
    func run() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: "convoy_changes") { notifications in
                        failures = 0
                        for try await n in notifications { await handle(n.payload) }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                store.logger.error("realtime: LISTEN convoy_changes failed", metadata: ["error": "\(PostgresStore.describe(error))"])
            }
            let backoff = [1.0, 2, 5, 10][min(failures, 3)]
            failures += 1
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

    func handle(_ payload: String) async {
        guard let notice = try? JSONDecoder().decode(Notice.self, from: Data(payload.utf8)),
              let table = store.schema.tables[notice.table], !table.primaryKey.isEmpty, let key = table.column(table.primaryKey),
              hub.hasSubscribers(table: notice.table)
        else { return }
        do {
            let change: ChangeEvent
            let keyJSON: Any = Int64(notice.key.text).map { $0 as Any } ?? notice.key.text
            if notice.type == "DELETE" {
                // The row is gone: as Supabase sends it, the old record is its key.
                change = ChangeEvent(table: table.name, type: "DELETE", recordJSON: [:], oldRecordJSON: [key.name: keyJSON],
                                     commitTimestamp: notice.commit_timestamp)
            } else {
                let sql = "SELECT row_to_json(r)::text FROM public.\(Schema.quote(table.name)) r WHERE \(Schema.quote(key.name)) = $1::\(key.type.postgresName)"
                var binds = PostgresBindings()
                binds.append(notice.key.text)
                let text = try await store.transaction(as: nil) { c in
                    try await PostgresStore.text(c, PostgresQuery(unsafeSQL: sql, binds: binds), logger: store.logger)
                }
                guard let data = text?.data(using: .utf8), let record = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    return  // changed again or deleted since: a later notice carries that
                }
                change = ChangeEvent(table: table.name, type: notice.type, recordJSON: record,
                                     oldRecordJSON: notice.type == "UPDATE" ? [key.name: keyJSON] : [:], commitTimestamp: notice.commit_timestamp)
            }
            let candidates = hub.route(change)
            guard !candidates.isEmpty else { return }
            if notice.type == "DELETE" {
                // No row left to check: delivered to signed-in subscribers whose binding matched, as Supabase does.
                hub.deliver(change, to: candidates.filter { $0.member.principal.role != .anon })
                return
            }
            let audience = "[" + candidates.map(\.member.principal.claimsJSON).joined(separator: ",") + "]"
            var binds = PostgresBindings()
            binds.append("public.\(Schema.quote(table.name))")
            binds.append(key.name)
            binds.append(notice.key.text)
            binds.append(audience)
            let allowed: [Int] = try await store.transaction(as: nil) { c in
                var out: [Int] = []
                for try await (i,) in try await c.query(PostgresQuery(unsafeSQL: "SELECT auth.readers($1::regclass, $2, $3, $4::jsonb)", binds: binds),
                                                        logger: store.logger).decode((Int32,).self) {
                    out.append(Int(i))
                }
                return out
            }
            hub.deliver(change, to: allowed.map { candidates[$0] })
        } catch {
            store.logger.error("realtime: cannot route a change", metadata: ["table": "\(notice.table)", "error": "\(PostgresStore.describe(error))"])
        }
    }
}
