import GRDB

/// Row-level security for the embedded store, as an app states it
/// (`ServerApp.policies`, each written beside the SQL policy it mirrors).
/// Semantics follow PostgreSQL: `USING` hides rows (reads and writes simply do not see
/// them); `WITH CHECK` rejects a written row with 42501. The service role
/// bypasses RLS; `anon` has no policy anywhere.
struct Policies: Sendable {
    /// A predicate over a table's own columns, as SQL with bound arguments.
    struct Predicate: Sendable {
        var sql: String
        var arguments: [DatabaseValue]
        static let none = Predicate(sql: "0", arguments: [])
        static let all = Predicate(sql: "1", arguments: [])
    }

    typealias Row = [String: DatabaseValue]
    /// Decides whether `row` may be written by `uid`; may read the database.
    typealias Check = @Sendable (_ row: Row, _ uid: String, _ db: Database) throws -> Bool
    /// Column rules no policy can express (PostgreSQL needs a trigger for them):
    /// returns a message when the change from `old` to `new` is not allowed.
    typealias Guard = @Sendable (_ old: Row, _ new: Row, _ uid: String) -> String?

    struct Table: Sendable {
        var select: (@Sendable (String) -> Predicate)?
        var insert: Check?
        var update: (using: @Sendable (String) -> Predicate, check: Check, guard: Guard?)?
        var delete: (@Sendable (String) -> Predicate)?
        /// The SELECT policy again, over one row in memory (with the database, for
        /// policies that look elsewhere): Realtime decides with it who may receive
        /// a change (Supabase checks RLS per subscriber).
        var readable: (@Sendable (Row, String, Database) throws -> Bool)? = nil
    }

    var tables: [String: Table]
}
