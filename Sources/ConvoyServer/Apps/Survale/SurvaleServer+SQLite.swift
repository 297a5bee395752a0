/// Survale's SQLite migrations beyond its tables (which are read from its SQL: `SurvaleServer+Schema.swift`).
extension SurvaleServer {
    /// v2: `join_requests` without its unique (operation, requester): one *pending* request a member, so a
    /// member who left may ask again (SQLite drops a table constraint only by rebuilding the table).
    static let joinRequestsAgain = """
        CREATE TABLE join_requests_v2 (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          operation_id TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
          requester_id TEXT NOT NULL REFERENCES users(id),
          status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
          created_at TEXT NOT NULL, decided_by TEXT REFERENCES users(id), decided_at TEXT);
        INSERT INTO join_requests_v2 (id, operation_id, requester_id, status, created_at, decided_by, decided_at)
          SELECT id, operation_id, requester_id, status, created_at, decided_by, decided_at FROM join_requests;
        DROP TABLE join_requests;
        ALTER TABLE join_requests_v2 RENAME TO join_requests;
        CREATE UNIQUE INDEX join_requests_one_pending ON join_requests (operation_id, requester_id) WHERE status = 'pending';
        """
}
