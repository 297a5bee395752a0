import ConvoyJSON
import ConvoyTime
import Foundation
import GRDB
import HTTPTypes

/// Survale's RPCs on the SQLite store (the operation lifecycle), its auto-end
/// and its purge, run as the server with every check explicit, each mirroring
/// its function in `SurvaleSQL/002_survale_rpc.sql`. Rows are written through
/// the store's transaction, so Realtime hears of an operation's start and end
/// as of any other write.
struct SurvaleRPC: Sendable {
    let store: Store
    let clock: any ConvoyClock

    typealias Row = [String: DatabaseValue]
    static let tables = SurvaleServer.schema.tables
    static let operations = tables["operations"]!, members = tables["operation_members"]!
    static let invites = tables["operation_invites"]!, requests = tables["join_requests"]!

    static let names: Set<String> = ["create_operation", "start_operation", "end_operation", "respond_to_invite",
                                     "decide_join_request", "leave_operation", "nearby_operations"]

    static func denied(_ message: String) -> APIError { .postgrest(.forbidden, "42501", message) }
    static func notNow(_ message: String) -> APIError { .postgrest(.badRequest, "P0001", message) }

    func call(_ name: String, _ args: [String: JSONValue], as uid: String) async throws -> JSONValue {
        try await store.write(at: Timestamps.format(clock.date)) { tx in
            let me = try Self.me(uid, tx.db)
            switch name {
            case "create_operation": return Self.json(try Self.create(args, me, tx))
            case "start_operation": return Self.json(try Self.start(args, uid, tx))
            case "end_operation":
                let o = try Self.ownOperation(args, uid, tx.db)
                guard Self.text(o.0, "status") != "ended" else { throw Self.notNow("operation has already ended") }
                return Self.json(try Self.end(o, reason: "case_agent", tx))
            case "respond_to_invite": return Self.json(try Self.respond(args, uid, tx))
            case "decide_join_request": return Self.json(try Self.decide(args, uid, tx))
            case "leave_operation": return Self.json(try Self.leave(args, uid, tx))
            default: return try Self.nearby(args, me, tx.db)
            }
        }
    }

    // MARK: The lifecycle

    /// `survale_me()`: the caller's profile.
    static func me(_ uid: String, _ db: Database) throws -> Row {
        guard let row = try GRDB.Row.fetchOne(db, sql: "SELECT * FROM users WHERE id = ?", arguments: [uid]) else {
            throw denied("no Survale profile for this user: the agency provisions users")
        }
        return tables["users"]!.values(of: row)
    }

    /// `survale_own_operation(op)`: the operation, if the caller is its case agent (one error for none and another's).
    static func ownOperation(_ args: [String: JSONValue], _ uid: String, _ db: Database, key: String = "operation_id") throws -> (Row, rowid: Int64) {
        guard let id = try uuid(args, key),
              let row = try GRDB.Row.fetchOne(db, sql: "SELECT rowid AS _rowid, * FROM operations WHERE id = ?", arguments: [id]),
              (row["case_agent_id"] as String?) == uid
        else { throw denied("only the case agent can do this") }
        return (operations.values(of: row), row["_rowid"])
    }

    /// `create_operation(name, incident_number)`: the name as given (`coalesce(trim(name), '') = ''` only refuses a blank one);
    /// text arguments as `json_to_record` reads them (a number's digits, a boolean's word).
    static func create(_ args: [String: JSONValue], _ me: Row, _ tx: SQLiteTransaction) throws -> Row {
        let name = args["name"]?.flatText ?? ""
        // `trim` takes spaces only: a tab or a no-break space is a name.
        guard !name.allSatisfy({ $0 == " " }) else { throw APIError.postgrest(.badRequest, "22023", "an operation needs a name") }
        let incident: DatabaseValue = args["incident_number"]?.flatText?.databaseValue ?? .null
        let id = UUID().uuidString.lowercased()
        let row = try tx.insert(into: operations, [
            "id": id.databaseValue, "agency_id": me["agency_id"]!, "team_id": me["team_id"]!, "case_agent_id": me["id"]!,
            "name": name.databaseValue, "incident_number": incident, "status": "draft".databaseValue, "created_at": tx.now.databaseValue,
            "started_at": .null, "ended_at": .null, "end_reason": .null, "idle_since": .null,
        ])
        try tx.insert(into: members, ["operation_id": id.databaseValue, "user_id": me["id"]!, "role": "case_agent".databaseValue,
                                      "joined_at": tx.now.databaseValue, "left_at": .null])
        return row
    }

    static func start(_ args: [String: JSONValue], _ uid: String, _ tx: SQLiteTransaction) throws -> Row {
        let (o, rowid) = try ownOperation(args, uid, tx.db)
        guard text(o, "status") == "draft" else { throw notNow("operation is \(text(o, "status") ?? "?"), not draft") }
        return try updated(operations, rowid, o, ["status": "active".databaseValue, "started_at": tx.now.databaseValue,
                                                   "idle_since": tx.now.databaseValue], tx)
    }

    /// `survale_end(op, reason)`: ended, every member gone, pending invites and requests closed.
    static func end(_ operation: (Row, rowid: Int64), reason: String, _ tx: SQLiteTransaction) throws -> Row {
        let (o, rowid) = operation
        let ended = try updated(operations, rowid, o, ["status": "ended".databaseValue, "ended_at": tx.now.databaseValue,
                                                       "end_reason": reason.databaseValue, "idle_since": .null], tx)
        let op = o["id"]!
        for (table, sql, set) in [
            (members, "SELECT rowid AS _rowid, * FROM operation_members WHERE operation_id = ? AND left_at IS NULL", ["left_at": tx.now.databaseValue]),
            (invites, "SELECT rowid AS _rowid, * FROM operation_invites WHERE operation_id = ? AND status = 'pending'",
             ["status": "declined".databaseValue, "decided_at": tx.now.databaseValue]),
            (requests, "SELECT rowid AS _rowid, * FROM join_requests WHERE operation_id = ? AND status = 'pending'",
             ["status": "denied".databaseValue, "decided_at": tx.now.databaseValue]),
        ] {
            for row in try GRDB.Row.fetchAll(tx.db, sql: sql, arguments: [op]) {
                _ = try updated(table, row["_rowid"], table.values(of: row), set, tx)
            }
        }
        return ended
    }

    static func respond(_ args: [String: JSONValue], _ uid: String, _ tx: SQLiteTransaction) throws -> Row {
        // Every argument is read (json_to_record) before the function runs: a bad flag is 22P02 whatever the invite.
        let (given, accept) = (try number(args, "invite_id"), try flag(args, "accept"))
        guard let id = given,
              let row = try GRDB.Row.fetchOne(tx.db, sql: "SELECT rowid AS _rowid, * FROM operation_invites WHERE id = ?", arguments: [id]),
              (row["invitee_id"] as String?) == uid
        else { throw denied("no such invite for you") }
        let invite = invites.values(of: row)
        guard text(invite, "status") == "pending" else { throw notNow("invite is already \(text(invite, "status") ?? "?")") }
        let op = text(invite, "operation_id")!
        guard try String.fetchOne(tx.db, sql: "SELECT status FROM operations WHERE id = ?", arguments: [op]) != "ended" else {
            throw notNow("operation has ended")
        }
        let answered = try updated(invites, row["_rowid"], invite, ["status": (accept ? "accepted" : "declined").databaseValue,
                                                                     "decided_at": tx.now.databaseValue], tx)
        if accept { try admit(uid, to: op, tx) }
        return answered
    }

    static func decide(_ args: [String: JSONValue], _ uid: String, _ tx: SQLiteTransaction) throws -> Row {
        let (given, approve) = (try number(args, "request_id"), try flag(args, "approve"))
        guard let id = given,
              let row = try GRDB.Row.fetchOne(tx.db, sql: "SELECT rowid AS _rowid, * FROM join_requests WHERE id = ?", arguments: [id]) else {
            throw denied("only the case agent can do this")
        }
        let request = requests.values(of: row)
        let (o, _) = try ownOperation(["operation_id": .string(text(request, "operation_id") ?? "")], uid, tx.db)
        guard text(request, "status") == "pending" else { throw notNow("request is already \(text(request, "status") ?? "?")") }
        guard text(o, "status") != "ended" else { throw notNow("operation has ended") }
        let decided = try updated(requests, row["_rowid"], request, [
            "status": (approve ? "approved" : "denied").databaseValue, "decided_by": uid.databaseValue, "decided_at": tx.now.databaseValue,
        ], tx)
        if approve { try admit(text(request, "requester_id")!, to: text(request, "operation_id")!, tx) }
        return decided
    }

    /// A member again, or for the first time (`ON CONFLICT … DO UPDATE SET left_at = NULL`).
    static func admit(_ user: String, to op: String, _ tx: SQLiteTransaction) throws {
        if let row = try GRDB.Row.fetchOne(tx.db, sql: "SELECT rowid AS _rowid, * FROM operation_members WHERE operation_id = ? AND user_id = ?",
                                           arguments: [op, user]) {
            _ = try updated(members, row["_rowid"], members.values(of: row), ["left_at": .null, "joined_at": tx.now.databaseValue], tx)
        } else {
            try tx.insert(into: members, ["operation_id": op.databaseValue, "user_id": user.databaseValue, "role": "member".databaseValue,
                                          "joined_at": tx.now.databaseValue, "left_at": .null])
        }
    }

    static func leave(_ args: [String: JSONValue], _ uid: String, _ tx: SQLiteTransaction) throws -> Row {
        guard let op = try uuid(args, "operation_id"),
              let row = try GRDB.Row.fetchOne(tx.db, sql: """
            SELECT rowid AS _rowid, * FROM operation_members WHERE operation_id = ? AND user_id = ? AND left_at IS NULL AND role = 'member'
            """, arguments: [op, uid])
        else { throw denied("not a current member (a case agent ends the operation instead)") }
        return try updated(members, row["_rowid"], members.values(of: row), ["left_at": tx.now.databaseValue], tx)
    }

    /// `nearby_operations(lat, lon, radius_m)`: generic markers of other agencies' active operations. A null among the
    /// three makes every distance comparison NULL: no marker (`[]`), never all of them.
    static func nearby(_ args: [String: JSONValue], _ me: Row, _ db: Database) throws -> JSONValue {
        guard args["lat"] != nil, args["lon"] != nil else {
            throw APIError.postgrest(.badRequest, "22023", "lat and lon are required numbers")
        }
        guard let lat = try double(args, "lat"), let lon = try double(args, "lon"),
              let radius = args["radius_m"] == nil ? 5000 : try double(args, "radius_m")
        else { return .array([]) }
        // The distance is computed for every staging area, as PostgreSQL's plan does (the condition reads only the
        // staging area and the arguments, so it is pushed down to that table's scan): one it cannot compute fails the call.
        let rows = try GRDB.Row.fetchAll(db, sql: """
            SELECT s.lat AS lat, s.lon AS lon, ca.callsign AS case_agent, a.name AS agency,
                   o.status = 'active' AND o.agency_id <> ? AS candidate
              FROM operations o JOIN staging_areas s ON s.operation_id = o.id JOIN users ca ON ca.id = o.case_agent_id
              JOIN agencies a ON a.id = o.agency_id
             ORDER BY ca.callsign
            """, arguments: [me["agency_id"]])
        var near: [GRDB.Row] = []
        for r in rows where try Self.metres(lat, lon, r["lat"], r["lon"]) <= radius && r["candidate"] == true { near.append(r) }
        return .array(near.map { r in
            ["agency": .string(r["agency"]), "case_agent": .string(r["case_agent"]),
             "lat": JSONValue((r["lat"] as Double * 100).rounded() / 100), "lon": JSONValue((r["lon"] as Double * 100).rounded() / 100)]
        })
    }

    /// Great-circle distance, as the SQL's haversine, and failing where PostgreSQL's does: `sin` of an infinity and
    /// `asin` past 1 (a staging area at latitude 1000, which no CHECK refuses) are 22003 there, for the whole call.
    static func metres(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) throws(APIError) -> Double {
        let rad = Double.pi / 180
        let h = pow(sin((lat2 - lat1) * rad / 2), 2) + cos(lat1 * rad) * cos(lat2 * rad) * pow(sin((lon2 - lon1) * rad / 2), 2)
        guard h.isFinite, sqrt(h) <= 1 else { throw .postgrest(.badRequest, "22003", "input is out of range") }
        return 6_371_000 * 2 * asin(sqrt(h))
    }

    // MARK: Pieces

    static func updated(_ t: Schema.Table, _ rowid: Int64, _ old: Row, _ set: Row, _ tx: SQLiteTransaction) throws -> Row {
        guard let row = try tx.update(t, rowid: rowid, old: old, set: set) else { return old.merging(set) { $1 } }
        return t.values(of: row)
    }

    static func text(_ row: Row, _ c: String) -> String? { String.fromDatabaseValue(row[c] ?? .null) }

    static func json(_ row: Row) -> JSONValue { Values.object(row) }

    // Arguments as `json_to_record` gives them to the SQL function: a JSON null is SQL NULL, never an absent argument
    // (which takes the function's DEFAULT), and NULL matches no row and fails every test (`IF`, `CASE WHEN`, `<=`).

    /// A uuid argument; nil for null (or absent). PostgreSQL's `uuid_in`: braces and hyphens optional (`Values.uuid`).
    static func uuid(_ args: [String: JSONValue], _ key: String) throws(APIError) -> String? {
        guard let value = args[key], value != .null else { return nil }
        guard let text = value.flatText, let u = Values.uuid(text) else {
            throw .postgrest(.badRequest, "22P02", "invalid input syntax for type uuid: \"\(value.flatText ?? "")\"")
        }
        return u
    }

    /// A bigint argument; nil for null (or absent).
    static func number(_ args: [String: JSONValue], _ key: String) throws(APIError) -> Int64? {
        guard let value = args[key], value != .null else { return nil }
        if let i = value.int64 { return i }
        if let s = value.string, let i = Values.bigint(s) { return i }
        throw .postgrest(.badRequest, "22P02", "invalid input syntax for type bigint: \"\(value.flatText ?? "")\"")
    }

    /// A double precision argument; nil for null. A string is read as `float8in` reads it.
    static func double(_ args: [String: JSONValue], _ key: String) throws(APIError) -> Double? {
        guard let value = args[key], value != .null else { return nil }
        if let d = value.double { return d }
        if let s = value.string, let d = Values.float8(s) { return d }
        throw .postgrest(.badRequest, "22P02", "invalid input syntax for type double precision: \"\(value.flatText ?? "")\"")
    }

    /// A boolean argument `DEFAULT true`: true when absent, false when null (`CASE WHEN NULL` takes the ELSE, `IF NULL`
    /// does not run: declined, denied), otherwise what PostgreSQL's `boolin` reads in its text (`json_to_record` gives a
    /// boolean argument `0`, `"f"` or `"no"` as text).
    static func flag(_ args: [String: JSONValue], _ key: String) throws(APIError) -> Bool {
        guard let value = args[key] else { return true }
        if value == .null { return false }
        if let b = value.bool { return b }
        guard let b = value.flatText.flatMap(Values.bool) else {
            throw .postgrest(.badRequest, "22P02", "invalid input syntax for type boolean: \"\(value.flatText ?? "")\"")
        }
        return b
    }
}
