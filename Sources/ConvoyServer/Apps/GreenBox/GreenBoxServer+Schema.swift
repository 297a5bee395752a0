/// Green Box's tables as the SQLite store serves them: read from its SQL (`GreenBoxSQL/001_greenbox.sql`, the PRD's
/// §3.1, and `003_invite_codes.sql`, §5.2–5.3), so they are written once (`SQLTables`). Identifiers in requests are
/// checked against the schema, values converted by column type, and the SQLite DDL is the same tables'.
extension GreenBoxServer {
    static let folder = "GreenBoxSQL"
    /// Its files, applied in order on PostgreSQL (`002_*_policies.sql` is a choice: `postgresChoices`).
    static let files = ["001_greenbox.sql", "003_invite_codes.sql"]
    static let tables = SQLTables.app(folder: folder, files: files)
    static var schema: Schema { tables.schema }

    /// What a friend sees of one's location: the exact fix, or a coarse one.
    static let preferences: Set<String> = ["precise", "general"]
}
