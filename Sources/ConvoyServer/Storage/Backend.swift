import ConvoyJSON
import Foundation
import HTTPTypes

/// What the services need from a database. Two stores implement it: SQLite
/// (`Store` and `SQLiteTables`: policies enforced in Swift) and PostgreSQL
/// (`PostgresStore` and `PostgresTables`: PostgreSQL enforces its own RLS).

/// GoTrue's tables: users, sessions and rotating refresh tokens.
protocol AuthStore: Sendable {
    /// Creates a user; false when the email is already taken.
    func insertUser(id: String, email: String?, passwordHash: String?, now: Date) async throws -> Bool
    /// The id and password hash of the user with this (lowercased) email.
    func credentials(email: String) async throws -> (id: String, hash: String?)?
    /// A new session with its first refresh token; stamps the user's last sign-in.
    func insertSession(id: String, userID: String, refreshToken: String, now: Date) async throws
    /// Rotates `token` to `fresh` (see `AuthService.refresh`).
    func rotate(token: String, fresh: String, now: Date, graceCutoff: Date) async throws -> RefreshOutcome
    /// Revokes one session, or every session of the user when `sessionID` is nil.
    func revokeSessions(userID: String, sessionID: String?) async throws
    func sessionIsLive(_ sessionID: String) async throws -> Bool
    func authUser(id: String) async throws -> AuthUser?
}

enum RefreshOutcome: Sendable {
    case rotated(userID: String, sessionID: String, token: String)
    case reused
    case notFound
}

/// A row of the auth users table, as GoTrue's user JSON needs it.
struct AuthUser: Sendable {
    var id: String
    var email: String?
    var isAnonymous: Bool
    var createdAt: Date
    var updatedAt: Date
    var lastSignInAt: Date?
}

/// PostgREST's operations on the tables a store serves, with row-level
/// security, plus its RPCs and the retention purge.
protocol TableStore: Sendable {
    var schema: Schema { get }
    func select(_ t: Schema.Table, _ q: RESTQuery, as who: Principal, countExact: Bool) async throws -> (rows: JSONRows, total: Int?)
    /// One object or an array of them, all or nothing; with `upsert`, conflicts
    /// on `on_conflict` merge (or are skipped with `ignoreDuplicates`).
    /// Inserts the union of the objects' keys (PostgREST): a key an object lacks is NULL for it, or with
    /// `missingDefault` (`Prefer: missing=default`) its column's default.
    func insert(_ t: Schema.Table, body: JSONValue, _ q: RESTQuery, as who: Principal, upsert: Bool,
                ignoreDuplicates: Bool, returning: Bool, missingDefault: Bool) async throws -> JSONRows
    func update(_ t: Schema.Table, body: JSONValue, _ q: RESTQuery, as who: Principal, returning: Bool) async throws -> JSONRows
    func delete(_ t: Schema.Table, _ q: RESTQuery, as who: Principal, returning: Bool) async throws -> JSONRows
    /// `POST /rpc/{name}` with named arguments: the function's JSON result.
    func rpc(_ name: String, _ args: [String: JSONValue], as who: Principal) async throws -> JSONValue
    /// The app's retention purge: deletes what was created before `cutoff`,
    /// logs the run as the app does, and returns how many rows went.
    func purge(before cutoff: Date, now: Date) async throws -> Int
}

extension TableStore {
    func table(_ name: String) throws(APIError) -> Schema.Table {
        guard let t = schema.tables[name] else {
            throw .postgrest(.notFound, "PGRST205", "Could not find the table 'public.\(name)' in the schema cache")
        }
        return t
    }

    /// An insert's body: one object or an array of them.
    static func objects(_ body: JSONValue) throws(APIError) -> [[String: JSONValue]] {
        if let one = body.dictionary { return [one] }
        if case .array(let items) = body {
            var out: [[String: JSONValue]] = []
            out.reserveCapacity(items.count)
            for item in items {
                guard let o = item.dictionary else { break }
                out.append(o)
            }
            if out.count == items.count { return out }
        }
        throw .postgrest(.badRequest, "PGRST102", "Expected a JSON object or an array of objects")
    }
}

/// Response rows: JSON objects.
struct JSONRows: Sendable {
    var objects: [JSONValue]
    static let empty = JSONRows(objects: [])
}
