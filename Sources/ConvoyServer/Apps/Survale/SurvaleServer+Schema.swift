/// Survale's tables as the SQLite store serves them: read from its SQL (`SurvaleSQL/001_survale.sql`), so they are
/// written once (`SQLTables`). Identifiers in requests are checked against the schema, values converted by column
/// type, and the SQLite DDL is the same tables'.
extension SurvaleServer {
    static let folder = "SurvaleSQL"
    static let files = ["001_survale.sql", "002_survale_rpc.sql", "003_survale_media.sql"]
    static let tables = SQLTables.app(folder: folder, files: files)
    static var schema: Schema { tables.schema }
}
