import ConvoyWire
import Foundation

/// Survale's chat after a gap (survale-spec §6: the operation's chat is persisted; §11: a phone coming back
/// catches up): a member reads its operation's `op_messages` (RLS: a member of the operation) created since
/// it was last on the chat channel, by id, a page at a time, as the app loads the lines it missed.
extension SurvaleApp {
    public func missedMessages(for session: Session, since: Double, after cursor: Int64, limit: Int,
                               via http: SupabaseHTTP) async throws(SupabaseError) -> MissedMessages {
        guard let operation = operation(of: session.userID) else { throw SupabaseError(kind: .notJoined, message: "no operation") }
        let query = "select=id,sender_id,body,media_path,created_at&operation_id=eq.\(operation)"
            + "&created_at=gte.\(CommitTimestamp.format(since))&id=gt.\(cursor)&order=id.asc&limit=\(limit)"
        let (rows, bytes) = try await SupabaseREST(http).select("op_messages", query: query, token: session.accessToken, as: MessageRow.self)
        var page = MissedMessages(lines: [], bytes: bytes, cursor: cursor)
        for row in rows {
            page.cursor = max(page.cursor, row.id)
            guard let message = Self.message(body: row.body, mediaPath: row.mediaPath) else {
                page.malformed += 1
                continue
            }
            page.lines.append((row.senderID, message))
        }
        return page
    }

    /// A row of `op_messages` as a member reads it.
    struct MessageRow: Decodable {
        var id: Int64
        var senderID: String
        var body: String
        var mediaPath: String?

        enum CodingKeys: String, CodingKey {
            case id, body
            case senderID = "sender_id"
            case mediaPath = "media_path"
        }
    }

    /// A chat line's body (`ChatLine` JSON) and `media_path` as the phone's message; nil: not a line it wrote.
    static func message(body: String, mediaPath: String?) -> GroupMessage? {
        guard let line = try? JSONDecoder().decode(ChatLine.self, from: Data(body.utf8)) else { return nil }
        return GroupMessage(seq: line.seq, sentNanos: line.sent_ns, text: line.text, media: media(of: line, path: mediaPath))
    }
}
