/// Green Box's tables on the SQLite store (the same columns and checks as
/// `GreenBoxSQL/001_greenbox.sql`). Every statement is idempotent: files
/// written before the app seam made these tables in the auth migration, and
/// opening them must leave their rows alone.
extension GreenBoxServer {
    static let sqliteTables = """
        CREATE TABLE IF NOT EXISTS users (
          id TEXT PRIMARY KEY REFERENCES auth_users(id) ON DELETE CASCADE,
          created_at TEXT NOT NULL, full_name TEXT, avatar_url TEXT, public_key TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS friendships (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          user_id_1 TEXT NOT NULL REFERENCES users(id), user_id_2 TEXT NOT NULL REFERENCES users(id),
          status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'active')),
          requested_by TEXT NOT NULL REFERENCES users(id),
          preference_1 TEXT CHECK (preference_1 IN ('precise', 'general')),
          preference_2 TEXT CHECK (preference_2 IN ('precise', 'general')),
          created_at TEXT NOT NULL,
          CHECK (user_id_1 <> user_id_2));
        CREATE INDEX IF NOT EXISTS friendships_user_1 ON friendships(user_id_1);
        CREATE INDEX IF NOT EXISTS friendships_user_2 ON friendships(user_id_2);
        CREATE TABLE IF NOT EXISTS encrypted_locations (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          sender_id TEXT NOT NULL REFERENCES users(id), recipient_id TEXT NOT NULL REFERENCES users(id),
          payload TEXT NOT NULL, created_at TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS encrypted_locations_recipient ON encrypted_locations(recipient_id, created_at);
        CREATE INDEX IF NOT EXISTS encrypted_locations_created ON encrypted_locations(created_at);
        CREATE TABLE IF NOT EXISTS invites (
          code TEXT PRIMARY KEY, inviter_id TEXT NOT NULL REFERENCES users(id),
          preference TEXT NOT NULL CHECK (preference IN ('precise', 'general')),
          created_at TEXT NOT NULL, expires_at TEXT NOT NULL, accepted_by TEXT REFERENCES users(id),
          accepted_at TEXT);
        CREATE TABLE IF NOT EXISTS purge_log (
          id INTEGER PRIMARY KEY AUTOINCREMENT, ran_at TEXT NOT NULL, deleted INTEGER NOT NULL,
          cutoff TEXT NOT NULL);
        """
}
