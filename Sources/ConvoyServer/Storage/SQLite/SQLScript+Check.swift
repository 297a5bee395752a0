import GRDB

/// An app's PostgreSQL script as the SQLite store reads it, from outside the module: what the fuzz target
/// (ConvoyFuzz) holds to the reader's promise that a table is read as written or refused, never misread.
package enum SQLScriptCheck {
    /// What reading `script` came to: refused (the reader's message), or read and what was found wrong.
    package enum Outcome: Equatable {
        case refused(String)
        case read(tables: Int, problems: [String])
    }

    /// Reads the tables; runs their DDL in an in-memory SQLite database, which must then hold exactly those
    /// tables and columns; reads the policies, refused when SQLite cannot run one of them there
    /// (`Policies.unpreparable`: `ReferenceServer` refuses to start with it).
    package static func read(_ script: String) -> Outcome {
        let tables: SQLTables
        do {
            tables = try SQLTables(script: script)
        } catch {
            return .refused(error.description)
        }
        var problems: [String] = []
        for (name, t) in tables.schema.tables {
            let columns = t.columns.map(\.name)
            if columns.isEmpty { problems.append("\(name): no columns") }
            if Set(columns).count != columns.count { problems.append("\(name): a column twice in \(columns)") }
            if !t.primaryKey.isEmpty, !columns.contains(t.primaryKey) { problems.append("\(name): primary key \(t.primaryKey) not a column") }
        }
        guard let db = try? DatabaseQueue(), (try? db.write({ try $0.execute(sql: tables.sqliteScript) })) != nil else {
            // SQLite refuses the DDL (a CHECK as written, say): the store's start fails and says so; nothing is misread.
            return .read(tables: tables.schema.tables.count, problems: problems)
        }
        try? db.read { d in
            for (name, t) in tables.schema.tables {
                let actual = (try? Row.fetchAll(d, sql: "SELECT name FROM pragma_table_info(?)", arguments: [name]).map { $0["name"] as String }) ?? []
                let declared = t.columns.map(\.name)
                if Set(actual) != Set(declared) { problems.append("\(name): SQLite has columns \(actual), the schema \(declared)") }
            }
        }
        guard let policies = try? SQLPolicies.read(script: script, schema: tables.schema) else {
            return .read(tables: tables.schema.tables.count, problems: problems)
        }
        // What SQLite cannot run, the store refuses to start with (as PostgreSQL refuses the CREATE POLICY).
        let unpreparable = (try? db.read { policies.unpreparable(in: $0, schema: tables.schema) }) ?? []
        if !unpreparable.isEmpty { return .refused(unpreparable.joined(separator: "; ")) }
        return .read(tables: tables.schema.tables.count, problems: problems)
    }
}
