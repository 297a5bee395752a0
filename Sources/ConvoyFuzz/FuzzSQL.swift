import ConvoyServer

/// An app's SQL as the SQLite store reads it (`CREATE TABLE`, `CREATE POLICY`, SQL functions): a declared app's
/// `sql:` folder is the user's text, read by Convoy's own tokenizer.
enum FuzzSQL {
    static let target = FuzzTarget(
        name: "sql",
        summary: "an app's SQL for the SQLite store (SQLTables, SQLPolicies); a refusal says why; a script read runs "
            + "in SQLite as exactly the tables and columns read, and a policy SQLite cannot run there is refused"
    ) { bytes in
        var inv = Invariants()
        switch SQLScriptCheck.read(bytes.text) {
        case .refused(let message):
            inv.expect(!message.isEmpty, "a refusal with no message")
        case .read(let tables, let problems):
            inv.accepted = tables > 0
            for p in problems { inv.expect(false, p) }
        }
        return inv
    }
}
