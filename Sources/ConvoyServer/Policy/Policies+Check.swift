import GRDB

extension Policies {
    /// What of these policies SQLite cannot run in `db`, each as "table: the COMMAND policy: SQLite's message": a
    /// column or table that is not there, SQL it does not read. PostgreSQL refuses such a policy at `CREATE POLICY`;
    /// the SQLite store refuses to start with it (`ReferenceServer`), rather than answer every request 500.
    /// Each `WHERE` predicate is compiled, each row check run over a row of nulls.
    func unpreparable(in db: Database, schema: Schema) -> [String] {
        let uid = "00000000-0000-0000-0000-000000000000"
        var problems: [String] = []
        for (name, p) in tables.sorted(by: { $0.key < $1.key }) {
            guard let table = schema.tables[name] else { continue }
            for (command, predicate) in [("SELECT", p.select), ("UPDATE", p.update?.using), ("DELETE", p.delete)] {
                guard let predicate = predicate?(uid) else { continue }
                do {
                    _ = try db.makeStatement(sql: "SELECT 1 FROM \(Schema.quote(name)) WHERE \(predicate.sql)")
                } catch {
                    problems.append("\(name): the \(command) policy: \(Self.sqliteMessage(error))")
                }
            }
            let row = Dictionary(uniqueKeysWithValues: table.columns.map { ($0.name, DatabaseValue.null) })
            for (command, check) in [("INSERT", p.insert), ("UPDATE", p.update?.check), ("SELECT", p.readable)] {
                do {
                    _ = try check?(row, uid, db)
                } catch {
                    problems.append("\(name): the \(command) policy's row check: \(Self.sqliteMessage(error))")
                }
            }
        }
        return problems
    }

    private static func sqliteMessage(_ error: any Error) -> String {
        guard let e = error as? DatabaseError else { return "\(error)" }
        return e.message ?? "\(e)"
    }
}

extension Store {
    /// What of `policies` SQLite cannot run in this store's database (`Policies.unpreparable`).
    func unpreparable(_ policies: Policies, schema: Schema) async throws -> [String] {
        try await pool.read { policies.unpreparable(in: $0, schema: schema) }
    }
}
