import ConvoyJSON
import ConvoyWire

/// Survale's after-action replay (spec §8): "Replay screen fetches `locations_archive` + `op_messages`", as a
/// member reads them (RLS: members of the operation, ended or not), a page at a time by id, oldest first.
extension SurvaleApp {
    public func replay(as session: Session, page: Int, via http: SupabaseHTTP) async throws(SupabaseError) -> ReplayLoad {
        guard let operation = operation(of: session.userID) else { throw SupabaseError(kind: .notJoined, message: "no operation") }
        let rest = SupabaseREST(http)
        var load = ReplayLoad()
        var cursor: Int64 = 0
        while true {
            let (rows, bytes) = try await rest.select("locations_archive",
                                                      query: "select=id,user_id,lat,lon,heading,speed,fix,recorded_at&operation_id=eq.\(operation)"
                                                          + "&id=gt.\(cursor)&order=id.asc&limit=\(page)",
                                                      token: session.accessToken, as: ArchivedFix.self)
            load.requests += 1
            load.bytes += bytes
            for row in rows {
                load.positions += 1
                load.positionsByMember[row.user_id, default: 0] += 1
                if row.heading != nil { load.withHeading += 1 }
            }
            guard rows.count == page, let last = rows.last?.id else { break }
            cursor = last
        }
        cursor = 0
        while true {
            let (rows, bytes) = try await rest.select("op_messages", query: "select=id,sender_id,body,media_path,created_at&operation_id=eq.\(operation)"
                                                          + "&id=gt.\(cursor)&order=id.asc&limit=\(page)",
                                                      token: session.accessToken, as: ReplayedLine.self)
            load.requests += 1
            load.bytes += bytes
            load.messages += rows.count
            guard rows.count == page, let last = rows.last?.id else { break }
            cursor = last
        }
        return load
    }

    /// A `locations_archive` row as the replay reads it.
    struct ArchivedFix: Decodable {
        var id: Int64
        var user_id: String
        var lat: Double
        var lon: Double
        var heading: Double?
        var speed: Double?
        var fix: String
        var recorded_at: String
    }

    /// An `op_messages` row as the replay reads it.
    struct ReplayedLine: Decodable {
        var id: Int64
        var sender_id: String
        var body: String
        var media_path: String?
    }
}
