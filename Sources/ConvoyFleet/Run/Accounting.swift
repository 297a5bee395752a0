import ConvoyMetrics

/// What one device sent and what it made of what it received, kept for the
/// run's accounting. Device indices are `Int32` to keep ten thousand of these small.
struct DeviceLedger: Sendable {
    /// One sharing tick: one sequence number, sealed to each friend online at the time.
    struct Tick: Sendable, Equatable {
        var seq: UInt64
        var recipients: [Int32]
        /// Why the insert failed (`http_403`, `transport`, …), nil when it succeeded.
        var failure: String?
        /// Unix time it was sent (intended), seconds.
        var wall: Double = 0
        /// Friends on other shards: whether they were online is for `convoy merge` to tell, from their ledgers.
        var remote: [Int32] = []
        /// Its insert failed at first and a later attempt of the retry queue succeeded.
        var retried = false
    }

    var sent: [Tick] = []
    /// Sequence numbers decrypted, accepted or stale, by sender.
    var received: [Int32: Set<UInt64>] = [:]
    /// Of those, the ones rejected as stale (PRD §4.4 step d).
    var stale: [Int32: Set<UInt64>] = [:]
    /// Of those, the ones decrypted after the retention window (the row should have been gone).
    var expired: [Int32: Set<UInt64>] = [:]
    /// Of the accepted ones, those that came through a backfill rather than live over Realtime.
    var backfilled: [Int32: Set<UInt64>] = [:]
    /// Rows from a sender that did not open, by sender (their sequence number is sealed inside).
    var decryptFailures: [Int32: Int] = [:]
    /// When the device counted as online (subscribed, until it left), Unix seconds; an open span ends at infinity.
    var online: [Span] = []
    /// When its Realtime connection was down: from the last message it heard before the loss to its resubscription.
    var gaps: [Span] = []

    struct Span: Sendable, Equatable {
        var from: Double
        var to: Double = .infinity
    }
}

extension Accounting {
    /// Matches each device's sent ticks with what its friends received. With `gapsLose` (broadcasts, which nothing
    /// stores), an update not received that was sent while its recipient's connection was down is lost for that
    /// (`recipient_disconnected`), not for the backend (`not_received`).
    static func reconcile(_ ledgers: [DeviceLedger], duplicates: Int, sentOffline: Int, gapsLose: Bool = false) -> Accounting {
        var a = Accounting()
        a.duplicates = duplicates
        a.sentOffline = sentOffline
        var decryptBudget = ledgers.map(\.decryptFailures)
        for (s, ledger) in ledgers.enumerated() {
            let sender = Int32(s)
            for tick in ledger.sent {
                for r in tick.recipients {
                    a.sent += 1
                    let recipient = ledgers[Int(r)]
                    let reason: String?
                    if recipient.expired[sender]?.contains(tick.seq) == true {
                        reason = "after_retention"
                    } else if recipient.stale[sender]?.contains(tick.seq) == true {
                        reason = "stale"
                    } else if recipient.received[sender]?.contains(tick.seq) == true {
                        reason = nil
                        if recipient.backfilled[sender]?.contains(tick.seq) == true { a.deliveredByBackfill += 1 }
                        if tick.retried { a.deliveredAfterRetry += 1 }
                    } else if let failure = tick.failure {
                        reason = failure
                    } else if let n = decryptBudget[Int(r)][sender], n > 0 {
                        decryptBudget[Int(r)][sender] = n - 1
                        reason = "decrypt_failed"
                    } else if gapsLose, recipient.gaps.contains(where: { $0.from <= tick.wall && tick.wall < $0.to }) {
                        reason = "recipient_disconnected"
                    } else {
                        reason = "not_received"
                    }
                    if let reason { a.lost[reason, default: 0] += 1 } else { a.delivered += 1 }
                }
            }
        }
        return a
    }
}
