import ConvoyJSON
import ConvoyTime
import Foundation
import GRDB
import HTTPTypes

/// PostgREST's table operations on the embedded store, with `Policies`
/// applied as PostgreSQL applies RLS. Every statement's identifiers come from
/// `Schema`; every value is a bound argument. Rows are written through
/// `SQLiteTransaction`, so their changes reach Realtime once committed.
struct SQLiteTables: TableStore {
    let store: Store
    /// The app served: its tables, RPCs and purge.
    let app: any ServerApp
    let schema: Schema
    let policies: Policies
    let clock: any ConvoyClock
    /// What the app's RPCs and purge work with.
    let context: SQLiteAppContext
    /// Its RPCs' signatures, as PostgREST matches a call against them.
    let signatures: [String: RPCSignature]

    init(store: Store, app: any ServerApp, policies: Policies, clock: any ConvoyClock, configuration: ServerConfiguration) {
        self.store = store
        self.app = app
        schema = app.schema
        self.policies = policies
        self.clock = clock
        context = SQLiteAppContext(store: store, clock: clock, configuration: configuration)
        signatures = app.rpcSignatures
    }

    /// A result row: column name to stored value.
    typealias JSONRow = [String: DatabaseValue]
    typealias Row = Policies.Row

    // MARK: - Reads

    func select(_ t: Schema.Table, _ q: RESTQuery, as who: Principal, countExact: Bool) async throws -> (rows: JSONRows, total: Int?) {
        let visible = visibility(t, who, \.select)
        var whereSQL = visible.sql
        var args = visible.arguments
        if let w = q.sqliteWhere {
            whereSQL += " AND \(w.sql)"
            args += w.arguments
        }
        let cols = q.columns.map { "\"\($0)\"" }.joined(separator: ", ")
        var page = ""
        if let limit = q.limit { page += " LIMIT \(limit)" } else if q.offset != nil { page += " LIMIT -1" }
        if let offset = q.offset { page += " OFFSET \(offset)" }
        let sql = "SELECT \(cols) FROM \"\(t.name)\" WHERE \(whereSQL)\(q.orderClause)\(page)"
        let arguments = StatementArguments(args)
        let countSQL = "SELECT COUNT(*) FROM \"\(t.name)\" WHERE \(whereSQL)"
        return try await store.pool.read { db in
            let rows = try GRDB.Row.fetchAll(db, sql: sql, arguments: arguments).map { Self.json($0, q.columns) }
            let total = countExact ? try Int.fetchOne(db, sql: countSQL, arguments: arguments) : nil
            return (Self.objects(rows, q.columns), total)
        }
    }

    // MARK: - Writes

    /// Inserts one object or an array of them, all or nothing. With `upsert`,
    /// rows whose `on_conflict` value exists are updated instead (merge) or
    /// skipped (`ignoreDuplicates`).
    /// `returning` (`Prefer: return=representation`) needs the SELECT policy to
    /// allow each written row, as PostgreSQL checks for `INSERT … RETURNING`:
    /// a sender asking for the location rows it posted gets 42501. So does an upsert, whose conflict target needs SELECT
    /// rights too (`ON CONFLICT (id) DO NOTHING` of a location row its sender cannot read is 42501 on PostgreSQL).
    /// A bulk insert inserts the union of its objects' keys, as PostgREST does: a key one object lacks is NULL for it,
    /// or with `missingDefault` (`Prefer: missing=default`) the column's default.
    func insert(_ t: Schema.Table, body: JSONValue, _ q: RESTQuery, as who: Principal, upsert: Bool,
                ignoreDuplicates: Bool, returning: Bool = false, missingDefault: Bool = false) async throws -> JSONRows {
        let objects = try Self.objects(body)
        // PostgREST checks every object's keys against the table before PostgreSQL plans or reads anything.
        let keys = Set(objects.flatMap(\.keys))
        try checkKeys(keys, t, as: who, inserting: true)
        let conflict = upsert ? (q.onConflict ?? t.primaryKey) : nil
        if let conflict, conflict != t.primaryKey, !t.unique.contains(conflict) {
            throw APIError.postgrest(.badRequest, "42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification")
        }
        let now = Timestamps.format(clock.date)
        // Which error comes first when several could follow the statement PostgreSQL runs (the PostgreSQL store's). With
        // `missing=default` and uneven keys it is a row of values each: reading the first row's parses the whole body
        // (a NUL anywhere is its error), then each row is read and written, policy and constraints, before the next.
        // Otherwise the body is one record set, read whole (each row's text, then its values by type) before any write.
        let rowByRow = missingDefault && objects.contains { $0.count != keys.count }
        var read: [Row] = []
        if rowByRow {
            if Values.holdsNUL(.array(objects.map { JSONValue($0) })) { throw Values.nulInJSON }
        } else {
            read = try objects.map { try provided($0, t, as: who) }
            if objects.count > 1 {
                let columns = Set(read.flatMap(\.keys))
                for i in read.indices { for key in columns where read[i][key] == nil { read[i][key] = .null } }
            }
        }
        let eager = read
        return try await write(at: now, q.columns) { tx in
            let db = tx.db
            var out: [JSONRow] = []
            for i in objects.indices {
                let given = rowByRow ? try provided(objects[i], t, as: who) : eager[i]
                let (full, missing) = completed(given, t, as: who, now: now)
                // PostgreSQL checks the INSERT policy on the proposed row first, also for
                // ON CONFLICT: whether a key exists is never revealed to a row the user could not insert.
                if who.role != .serviceRole {
                    guard who.role == .authenticated, let uid = who.userID, let check = policies.tables[t.name]?.insert,
                          try check(full, uid, db)
                    else { throw rlsViolation(t, who) }
                    // Read back (RETURNING), the row must pass the SELECT policy too: PostgreSQL adds it to the insert's
                    // checks, which come before the row's constraints (NOT NULL, CHECK; a foreign key at the statement's end).
                    // So do an upsert's: its conflict target needs SELECT rights, as RETURNING does.
                    if returning || conflict != nil { try requireReadable(full, t, who, db) }
                }
                // The proposed row's constraints come before ON CONFLICT looks for its key (ExecConstraints first).
                if let missing {
                    throw APIError.postgrest(.badRequest, "23502", "null value in column \"\(missing)\" of relation \"\(t.name)\" violates not-null constraint")
                }
                if let conflict, let key = given[conflict],
                   let existing = try GRDB.Row.fetchOne(db, sql: "SELECT rowid AS _rowid, * FROM \"\(t.name)\" WHERE \"\(conflict)\" = ?", arguments: [key]) {
                    if ignoreDuplicates { continue }
                    // ON CONFLICT DO UPDATE: the existing row must pass the UPDATE and SELECT policies' USING, the row it
                    // becomes their checks (PostgreSQL's conflict and update checks; the conflict target needs SELECT rights).
                    let json = try update(t, rowid: existing["_rowid"], old: t.values(of: existing), with: given, as: who, tx, q,
                                          readBack: true, conflict: true)
                    out.append(json)
                    continue
                }
                let stored = try tx.insert(into: t, full)
                if returning { try requireReadable(stored, t, who, tx.db) }
                out.append(stored.filter { q.columns.contains($0.key) })
            }
            return out
        }
    }

    /// PATCH: the rows the filters select among those the policy lets the user
    /// see; each new row must pass the policy's check.
    func update(_ t: Schema.Table, body: JSONValue, _ q: RESTQuery, as who: Principal, returning: Bool = false) async throws -> JSONRows {
        guard let object = body.dictionary else {
            throw APIError.postgrest(.badRequest, "PGRST102", "Expected a JSON object")
        }
        // No columns: no UPDATE at all, as on PostgreSQL (PostgREST plans `SELECT … WHERE false`): no rows, no events.
        guard !object.isEmpty else { return .empty }
        try checkKeys(object.keys, t, as: who, inserting: false)
        // A value PostgreSQL cannot read is an error only when a row is there to update: it reads the body joined to the
        // rows the filters and the policy select, and reads nothing when there are none.
        let converted = Result { () throws(APIError) -> Row in try provided(object, t, as: who) }
        let visible = visibility(t, who) { $0.update?.using }
        var whereSQL = visible.sql, args = visible.arguments
        if let w = q.sqliteWhere {
            whereSQL += " AND \(w.sql)"
            args += w.arguments
        }
        let selectSQL = "SELECT rowid AS _rowid, * FROM \"\(t.name)\" WHERE \(whereSQL)"
        let arguments = StatementArguments(args)
        return try await write(at: Timestamps.format(clock.date), q.columns) { tx in
            var out: [JSONRow] = []
            let selected = try GRDB.Row.fetchAll(tx.db, sql: selectSQL, arguments: arguments)
            guard !selected.isEmpty else { return [] }
            let given = try converted.get()
            for existing in selected {
                let json = try update(t, rowid: existing["_rowid"], old: t.values(of: existing), with: given, as: who, tx, q,
                                           readBack: returning)
                out.append(json)
            }
            return out
        }
    }

    func delete(_ t: Schema.Table, _ q: RESTQuery, as who: Principal, returning: Bool = true) async throws -> JSONRows {
        let visible = visibility(t, who, \.delete)
        var whereSQL = visible.sql, args = visible.arguments
        if let w = q.sqliteWhere {
            whereSQL += " AND \(w.sql)"
            args += w.arguments
        }
        let arguments = StatementArguments(args)
        return try await write(at: Timestamps.format(clock.date), q.columns) { [whereSQL] tx in
            try tx.delete(from: t, where: whereSQL, arguments: arguments).map { Self.json($0, q.columns) }
        }
    }

    // MARK: - RPC and retention

    /// The app's RPC of that name, run as the server with its checks explicit.
    func rpc(_ name: String, _ args: [String: JSONValue], as who: Principal) async throws -> JSONValue {
        // PostgREST finds the function by the arguments' names first, then PostgreSQL checks the caller's EXECUTE grant,
        // then reads them as a JSON record: a string with a NUL is no text (22P05), whatever its type.
        if let signature = signatures[name], !signature.accepts(args.keys) { throw RPCSignature.noFunction(name, args.keys) }
        if let refusal = app.rpcRefusal(name, as: who) { throw refusal }
        if args.values.contains(where: Values.holdsNUL) { throw Values.nulInJSON }
        guard let result = try await app.rpc(name, args, as: who, in: context) else {
            throw APIError.postgrest(.notFound, "PGRST202", "Could not find the function public.\(name) in the schema cache")
        }
        return result
    }

    func purge(before cutoff: Date, now: Date) async throws -> Int {
        try await app.purge(before: cutoff, now: now, in: context)
    }

    // MARK: - Pieces

    /// Rows as response objects, their columns in `columns`' order.
    static func objects(_ rows: [JSONRow], _ columns: [String]) -> JSONRows {
        JSONRows(objects: rows.map { Values.object($0, columns) })
    }

    /// One row's update, as `who`: the policy's USING and guard, then its check on the new row, and with `readBack`
    /// (RETURNING) the SELECT policy on it, all before the write meets the row's constraints, as in PostgreSQL.
    /// Returns the row as `q` selects it.
    private func update(_ t: Schema.Table, rowid: Int64, old: Row, with given: Row, as who: Principal,
                        _ tx: SQLiteTransaction, _ q: RESTQuery, readBack: Bool, conflict: Bool = false) throws -> JSONRow {
        var new = old
        for (k, v) in given { new[k] = v }
        if who.role != .serviceRole {
            guard who.role == .authenticated, let uid = who.userID, let policy = policies.tables[t.name]?.update else {
                throw rlsViolation(t, who)
            }
            let using = policy.using(uid)
            guard try Bool.fetchOne(tx.db, sql: "SELECT EXISTS (SELECT 1 FROM \"\(t.name)\" WHERE rowid = ? AND \(using.sql))",
                                    arguments: StatementArguments([rowid.databaseValue] + using.arguments)) == true
            else { throw rlsViolation(t, who, using: true) }
            if conflict { try requireReadable(old, t, who, tx.db, using: true) }
            if let message = policy.guard?(old, new, uid) {
                throw APIError.postgrest(who.role == .anon ? .unauthorized : .forbidden, "42501", message)
            }
            guard try policy.check(new, uid, tx.db) else { throw rlsViolation(t, who) }
        }
        if readBack { try requireReadable(new, t, who, tx.db) }
        let row = try tx.update(t, rowid: rowid, old: old, set: given)
        return row.map { Self.json($0, q.columns) } ?? [:]
    }

    /// The row an insert would write: the given values, defaults, server stamps
    /// (for users), NULL for other absent columns; identity columns stay absent
    /// for the database to fill. Also the first NOT NULL column left without a value.
    private func completed(_ given: Row, _ t: Schema.Table, as who: Principal, now: String) -> (Row, missing: String?) {
        var full = given
        var missing: String?
        for c in t.columns where full[c.name] == nil || (c.defaultValue.isServerStamped && who.role != .serviceRole) {
            switch c.defaultValue {
            case .identity: continue
            case .now: full[c.name] = now.databaseValue
            case .value(let v): full[c.name] = v.databaseValue
            case .uuid: full[c.name] = UUID().uuidString.lowercased().databaseValue
            case .database, nil:
                full[c.name] = .null
            }
        }
        if let c = t.columns.first(where: { !$0.nullable && full[$0.name] == .null }) { missing = c.name }
        return (full, missing)
    }

    /// The body's values converted by type; its keys were checked already (`checkKeys`, once a request).
    /// For users (not the service role), server-stamped times (`created_at`) are the server's, as a trigger
    /// would keep them: a client cannot post rows the retention purge never reaches.
    private func provided(_ object: [String: JSONValue], _ t: Schema.Table, as who: Principal) throws(APIError) -> Row {
        // PostgreSQL reads a row's text before any of its values by type: a NUL in any of its strings comes first.
        if object.values.contains(where: { if case .string(let s) = $0 { s.utf8.contains(0) } else { false } }) { throw Values.nulInJSON }
        var row: Row = [:]
        // In the table's column order, as `json_populate_record` reads a row: the first value it cannot read is the error.
        for c in t.columns {
            guard let value = object[c.name] else { continue }
            if who.role != .serviceRole, c.defaultValue.isServerStamped { continue }
            row[c.name] = try Values.fromJSON(value, as: c, now: clock.date)
        }
        return row
    }

    /// A body's keys: each a column of the table (PostgREST's PGRST204), then, for users, none an identity column
    /// (PostgreSQL's 428C9, found as it plans the statement, as `GENERATED ALWAYS` keeps a client from pinning a
    /// sequence). Sorted, so that the error named is always the same one.
    private func checkKeys(_ keys: some Collection<String>, _ t: Schema.Table, as who: Principal, inserting: Bool) throws(APIError) {
        let keys = keys.sorted()
        if let key = keys.first(where: { t.column($0) == nil }) {
            throw .postgrest(.badRequest, "PGRST204", "Could not find the '\(key)' column of '\(t.name)' in the schema cache")
        }
        guard who.role != .serviceRole else { return }
        for key in keys {
            guard case .identity? = t.column(key)?.defaultValue else { continue }
            throw .postgrest(.badRequest, "428C9", inserting ? "cannot insert a non-DEFAULT value into column \"\(key)\""
                                                              : "column \"\(key)\" can only be updated to DEFAULT",
                             details: "Column \"\(key)\" is an identity column defined as GENERATED ALWAYS.")
        }
    }

    private func visibility(_ t: Schema.Table, _ who: Principal,
                            _ policy: (Policies.Table) -> (@Sendable (String) -> Policies.Predicate)?) -> Policies.Predicate {
        switch who.role {
        case .serviceRole: return .all
        case .anon: return .none
        case .authenticated:
            guard let uid = who.userID, let table = policies.tables[t.name], let p = policy(table) else { return .none }
            return p(uid)
        }
    }

    private func requireReadable(_ row: Row, _ t: Schema.Table, _ who: Principal, _ db: Database, using: Bool = false) throws {
        guard who.role != .serviceRole else { return }
        guard who.role == .authenticated, let uid = who.userID, let readable = policies.tables[t.name]?.readable,
              try readable(row, uid, db)
        else { throw rlsViolation(t, who, using: using) }
    }

    private func rlsViolation(_ t: Schema.Table, _ who: Principal, using: Bool = false) -> APIError {
        .postgrest(who.role == .anon ? .unauthorized : .forbidden, "42501",
                   "new row violates row-level security policy\(using ? " (USING expression)" : "") for table \"\(t.name)\"")
    }

    /// Runs a write transaction (its row changes reach Realtime once
    /// committed), turning SQLite constraint failures into PostgreSQL's codes
    /// and statuses.
    private func write(at now: String, _ columns: [String],
                       _ body: @escaping @Sendable (SQLiteTransaction) throws -> [JSONRow]) async throws -> JSONRows {
        do {
            return Self.objects(try await store.write(at: now, body), columns)
        } catch let error as DatabaseError {
            throw Self.translate(error)
        }
    }

    static func translate(_ error: DatabaseError) -> APIError {
        switch error.extendedResultCode {
        case .SQLITE_CONSTRAINT_PRIMARYKEY, .SQLITE_CONSTRAINT_UNIQUE:
            return .postgrest(.conflict, "23505", "duplicate key value violates unique constraint", details: error.message)
        case .SQLITE_CONSTRAINT_FOREIGNKEY:
            return .postgrest(.conflict, "23503", "insert or update violates foreign key constraint",
                              details: "a referenced row does not exist")
        case .SQLITE_CONSTRAINT_NOTNULL:
            return .postgrest(.badRequest, "23502", "null value violates not-null constraint", details: error.message)
        case .SQLITE_CONSTRAINT_CHECK:
            return .postgrest(.badRequest, "23514", "new row violates check constraint", details: error.message)
        default:
            return .postgrest(.internalServerError, "XX000", "database error", details: error.message)
        }
    }

    static func json(_ r: GRDB.Row, _ columns: [String]) -> JSONRow {
        var out: JSONRow = [:]
        for c in columns { out[c] = r[c] as DatabaseValue? ?? .null }
        return out
    }
}
