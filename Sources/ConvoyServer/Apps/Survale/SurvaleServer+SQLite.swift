/// Survale's tables on the SQLite store: the same columns, keys and checks as
/// `SurvaleSQL/001_survale.sql` (UUIDs as lowercase text, times as the
/// platform's timestamps). Every statement is idempotent.
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

    static let sqliteTables = """
        CREATE TABLE IF NOT EXISTS agencies (
          id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS teams (
          id TEXT PRIMARY KEY, agency_id TEXT NOT NULL REFERENCES agencies(id) ON DELETE CASCADE,
          name TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE (id, agency_id));
        CREATE TABLE IF NOT EXISTS users (
          id TEXT PRIMARY KEY REFERENCES auth_users(id) ON DELETE CASCADE,
          team_id TEXT NOT NULL, agency_id TEXT NOT NULL, callsign TEXT NOT NULL,
          vehicle_type TEXT NOT NULL DEFAULT 'sedan' CHECK (vehicle_type IN ('sedan', 'suv', 'pickup')),
          vehicle_color TEXT NOT NULL DEFAULT 'blue', created_at TEXT NOT NULL,
          FOREIGN KEY (team_id, agency_id) REFERENCES teams(id, agency_id));
        CREATE TABLE IF NOT EXISTS operations (
          id TEXT PRIMARY KEY, agency_id TEXT NOT NULL, team_id TEXT NOT NULL,
          case_agent_id TEXT NOT NULL REFERENCES users(id), name TEXT NOT NULL, incident_number TEXT,
          status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'ended')),
          created_at TEXT NOT NULL, started_at TEXT, ended_at TEXT,
          end_reason TEXT CHECK (end_reason IN ('case_agent', 'auto_end')), idle_since TEXT,
          FOREIGN KEY (team_id, agency_id) REFERENCES teams(id, agency_id));
        CREATE INDEX IF NOT EXISTS operations_status ON operations(status);
        CREATE TABLE IF NOT EXISTS operation_members (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          operation_id TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
          user_id TEXT NOT NULL REFERENCES users(id),
          role TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('case_agent', 'member')),
          joined_at TEXT NOT NULL, left_at TEXT, UNIQUE (operation_id, user_id));
        CREATE INDEX IF NOT EXISTS operation_members_user ON operation_members(user_id);
        CREATE TABLE IF NOT EXISTS operation_invites (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          operation_id TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
          invitee_id TEXT NOT NULL REFERENCES users(id), invited_by TEXT NOT NULL REFERENCES users(id),
          status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'declined')),
          created_at TEXT NOT NULL, decided_at TEXT, UNIQUE (operation_id, invitee_id));
        CREATE INDEX IF NOT EXISTS operation_invites_invitee ON operation_invites(invitee_id);
        CREATE TABLE IF NOT EXISTS join_requests (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          operation_id TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
          requester_id TEXT NOT NULL REFERENCES users(id),
          status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
          created_at TEXT NOT NULL, decided_by TEXT REFERENCES users(id), decided_at TEXT,
          UNIQUE (operation_id, requester_id));
        CREATE TABLE IF NOT EXISTS targets (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          operation_id TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
          kind TEXT NOT NULL CHECK (kind IN ('person', 'vehicle', 'location')), label TEXT NOT NULL,
          lat REAL, lon REAL, created_by TEXT NOT NULL REFERENCES users(id), created_at TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS staging_areas (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          operation_id TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
          label TEXT NOT NULL, lat REAL NOT NULL, lon REAL NOT NULL, created_at TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS op_messages (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          operation_id TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
          sender_id TEXT NOT NULL REFERENCES users(id), body TEXT NOT NULL DEFAULT '', media_path TEXT,
          created_at TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS op_messages_operation ON op_messages(operation_id, id);
        CREATE TABLE IF NOT EXISTS locations_archive (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          operation_id TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
          user_id TEXT NOT NULL REFERENCES users(id), lat REAL NOT NULL, lon REAL NOT NULL,
          accuracy REAL, heading REAL, speed REAL,
          fix TEXT NOT NULL DEFAULT 'gps' CHECK (fix IN ('gps', 'reduced')),
          recorded_at TEXT NOT NULL, created_at TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS locations_archive_operation ON locations_archive(operation_id, recorded_at);
        CREATE TABLE IF NOT EXISTS purge_log (
          id INTEGER PRIMARY KEY AUTOINCREMENT, ran_at TEXT NOT NULL, deleted INTEGER NOT NULL,
          cutoff TEXT NOT NULL);
        """
}
