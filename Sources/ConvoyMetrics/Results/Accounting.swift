/// Where every update went. It closes: `sent = delivered + Σ lost`, with
/// duplicates and updates to friends who were not online counted apart.
public struct Accounting: Sendable, Equatable, Codable {
    /// Updates (one per friend per tick) to friends online when they were sent.
    public var sent = 0
    /// Decrypted, valid and shown to the friend.
    public var delivered = 0
    /// Of those, how many came late through a backfill (after a reconnect) rather than live.
    public var deliveredByBackfill = 0
    /// Of those, how many were posted by a retry after their first insert failed.
    public var deliveredAfterRetry = 0
    /// Why the rest were not: `not_received`, `after_retention` (decrypted later than the retention window),
    /// `stale`, `decrypt_failed`, the insert's failure (`http_403`, `transport`, …), or the retry queue's
    /// (`retry_expired`, `retry_queue_full`, `retry_unsent`: still queued when the run ended).
    public var lost: [String: Int] = [:]
    /// Received again after the first time (a Realtime resend or a backfill overlap).
    public var duplicates = 0
    /// Updates to friends who were not online (not arrived yet, or gone): not expected.
    public var sentOffline = 0

    public var lostTotal: Int { lost.values.reduce(0, +) }
    public var closes: Bool { sent == delivered + lostTotal }

    public init() {}

    /// Fields added after version 1 was first written decode as 0 when absent (older results folders).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sent = try c.decode(Int.self, forKey: .sent)
        delivered = try c.decode(Int.self, forKey: .delivered)
        deliveredByBackfill = try c.decodeIfPresent(Int.self, forKey: .deliveredByBackfill) ?? 0
        deliveredAfterRetry = try c.decodeIfPresent(Int.self, forKey: .deliveredAfterRetry) ?? 0
        lost = try c.decode([String: Int].self, forKey: .lost)
        duplicates = try c.decode(Int.self, forKey: .duplicates)
        sentOffline = try c.decode(Int.self, forKey: .sentOffline)
    }

    enum CodingKeys: String, CodingKey {
        case sent, delivered, lost, duplicates
        case sentOffline = "sent_offline"
        case deliveredByBackfill = "delivered_by_backfill"
        case deliveredAfterRetry = "delivered_after_retry"
    }
}
