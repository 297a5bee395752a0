import ConvoyJSON
import ConvoyWire

/// Survale's retention (spec §2): everything of an operation is purged a set time (7 days; compressed in a
/// test) after it ends. The retention check reads, as a member or with the service key, what is left of an
/// operation: its row (when it ended), and how much of its chat, archive and media is still readable.
extension SurvaleApp {
    public func groupID(of userID: String) -> String? { operation(of: userID) }

    public func groupRemains(_ group: String, reader: String?, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> GroupRemains {
        let rest = SupabaseREST(http)
        let row = try await rest.select("operations", query: "select=status,ended_at,end_reason&id=eq.\(group)", token: token).first
        var remains = GroupRemains()
        if let row {
            // Still going: nothing of it is due for the purge, so nothing to count.
            guard row["status"]?.string == "ended", let text = row["ended_at"]?.string else { return remains }
            (remains.endedAt, remains.endedText) = (CommitTimestamp.parse(text), text)
            remains.byBackend = row["end_reason"]?.string == "auto_end"
        }
        // Ended, or no longer visible (purged): what of it is left.
        let of = "operation_id=eq.\(group)"
        remains.readable[.messages] = try await rest.count("op_messages", filter: of, token: token)
        remains.readable[.archive] = try await rest.count("locations_archive", filter: of, token: token)
        if let reader {
            remains.own[.messages] = try await rest.count("op_messages", filter: "\(of)&sender_id=eq.\(reader)", token: token)
            remains.own[.archive] = try await rest.count("locations_archive", filter: "\(of)&user_id=eq.\(reader)", token: token)
        }
        // Objects are `<operation>/<sender's first 8>-<seq>-<nonce>.<ext>` (SurvaleApp+Media).
        let objects = try await SupabaseStorage(http).list(bucket: Self.mediaBucket, prefix: group, limit: 1000, token: token)
        remains.readable[.media] = objects.count
        if let reader { remains.own[.media] = objects.filter { $0.name.hasPrefix("\(reader.prefix(8))-") }.count }
        return remains
    }
}
