import GRDB

/// One write transaction on the SQLite store (`Store.write`). The rows written
/// through it are the changes Realtime hears of: once the transaction
/// commits, the store hands them to the change feed, in commit order, as
/// PostgreSQL's triggers announce every row written there. The tables and the
/// apps' RPCs write rows through it and never talk to Realtime themselves;
/// `db` is there for reads, checks and bookkeeping no subscriber sees.
final class SQLiteTransaction {
    typealias Row = [String: DatabaseValue]

    let db: Database
    /// The server's time for this transaction, as stored (commit timestamps).
    let now: String
    /// The row changes so far, in the order they were made.
    private(set) var changes: [ChangeEvent] = []

    init(db: Database, now: String) {
        self.db = db
        self.now = now
    }

    /// Inserts `row`: every column's value but identities', which the database
    /// numbers. Returns the row as stored.
    @discardableResult
    func insert(into t: Schema.Table, _ row: Row) throws -> Row {
        let names = row.keys.sorted()
        // Prepared once per table and set of columns (GRDB's statement cache), not compiled for every row.
        let insert = try db.cachedStatement(sql: "INSERT INTO \(Schema.quote(t.name)) (\(names.map(Schema.quote).joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))")
        try insert.execute(arguments: StatementArguments(names.map { row[$0]! }))
        // The stored row is what was written plus the identity the database chose:
        // no need to read it back.
        var stored = row
        for c in t.columns where stored[c.name] == nil {
            if case .identity? = c.defaultValue { stored[c.name] = db.lastInsertedRowID.databaseValue }
        }
        changes.append(ChangeEvent(table: t.name, type: "INSERT", record: stored, oldRecord: [:], commitTimestamp: now))
        return stored
    }

    /// Sets `values` on the row at `rowid`, which held `old`. Returns the row as
    /// stored now (nil if it is gone).
    @discardableResult
    func update(_ t: Schema.Table, rowid: Int64, old: Row, set values: Row) throws -> GRDB.Row? {
        let names = values.keys.sorted()
        if !names.isEmpty {
            try db.execute(sql: "UPDATE \(Schema.quote(t.name)) SET \(names.map { "\(Schema.quote($0)) = ?" }.joined(separator: ", ")) WHERE rowid = ?",
                           arguments: StatementArguments(names.map { values[$0]! } + [rowid.databaseValue]))
        }
        let row = try GRDB.Row.fetchOne(db, sql: "SELECT * FROM \(Schema.quote(t.name)) WHERE rowid = ?", arguments: [rowid])
        var new = old
        for (k, v) in values { new[k] = v }
        // The old record is its key alone, as Supabase sends it for a table under row-level security (and the
        // PostgreSQL store does): what the row held before is not every subscriber's to see.
        changes.append(ChangeEvent(table: t.name, type: "UPDATE", record: row.map { t.values(of: $0) } ?? new,
                                   oldRecord: [t.primaryKey: old[t.primaryKey] ?? .null], commitTimestamp: now))
        return row
    }

    /// Deletes the rows `whereSQL` selects. Returns them as they were.
    @discardableResult
    func delete(from t: Schema.Table, where whereSQL: String, arguments: StatementArguments) throws -> [GRDB.Row] {
        let found = try GRDB.Row.fetchAll(db, sql: "SELECT * FROM \(Schema.quote(t.name)) WHERE \(whereSQL)", arguments: arguments)
        try db.execute(sql: "DELETE FROM \(Schema.quote(t.name)) WHERE \(whereSQL)", arguments: arguments)
        changes += found.map { row in
            ChangeEvent(table: t.name, type: "DELETE", record: [:], oldRecord: [t.primaryKey: t.values(of: row)[t.primaryKey] ?? .null],
                        commitTimestamp: now)
        }
        return found
    }
}

extension Schema.Table {
    /// A stored row's value for each of the table's columns (NULL where absent).
    func values(of row: GRDB.Row) -> [String: DatabaseValue] {
        var out: [String: DatabaseValue] = [:]
        for c in columns { out[c.name] = row[c.name] as DatabaseValue? ?? .null }
        return out
    }
}
