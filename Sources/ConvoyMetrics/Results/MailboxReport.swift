/// A mailbox app's messages (QuickPic's, and Closer's answers to the daily question): the accounting (every message
/// sent is delivered, lost with a reason, or held for the partner's answer), the backend's two ACK checks where an
/// ACK deletes, and what polling cost (summary.json's `mailbox`; docs/results.md).
public struct MailboxReport: Codable, Sendable, Equatable {
    public var sent = 0
    public var delivered = 0
    /// Undelivered messages by reason: `not_fetched` (the recipient polled in time and never got it: the backend
    /// lost it), `purged_unfetched` (the recipient's next poll came after the fallback purge was due), `parked` (a
    /// recipient that never polls: the purge is its end), `not_polled_since`, `rejected_<reason>`.
    public var lost: [String: Int] = [:]
    /// Messages fetched again after their acknowledgement had succeeded: the backend did not delete on ACK.
    public var afterAck = 0
    /// Acknowledgements of a message just fetched that found it gone already.
    public var ackGone = 0
    /// Messages still waiting at the end for their recipient's own answer (Closer's mutual reveal): neither
    /// delivered nor lost.
    public var held = 0
    /// Whether an acknowledgement deletes (QuickPic); Closer's marks the answer revealed and keeps it.
    public var acknowledgeDeletes = true
    public var polls = 0
    public var emptyPolls = 0
    public var pollFailures = 0
    /// Bytes of sends up and of poll responses down (headers included).
    public var bytesUp = 0
    public var bytesDown = 0
    /// A listener app's held connections (Closer's Firestore Listen); nil for an app that polls.
    public var listeners: Listeners?
    /// The notifications the backend owed the phones (Closer's outcome reminders); nil for an app with none.
    public var notifications: NotificationReport?

    public struct Listeners: Codable, Sendable, Equatable {
        /// Connections opened, and attempts that failed.
        public var opened = 0
        public var failed = 0
        /// Messages the backend pushed down them, and their bytes each way.
        public var pushes = 0
        public var bytesDown = 0
        public var bytesUp = 0
        /// Keepalive pings on quiet connections (each its own radio wake).
        public var keepalives = 0

        public init() {}

        enum CodingKeys: String, CodingKey {
            case opened, failed, pushes, keepalives
            case bytesDown = "bytes_down"
            case bytesUp = "bytes_up"
        }
    }

    public init() {}

    enum CodingKeys: String, CodingKey {
        case sent, delivered, lost, polls, held
        case acknowledgeDeletes = "acknowledge_deletes"
        case afterAck = "after_ack"
        case ackGone = "ack_gone"
        case emptyPolls = "empty_polls"
        case pollFailures = "poll_failures"
        case bytesUp = "bytes_up"
        case bytesDown = "bytes_down"
        case listeners, notifications
    }

    /// Reads summaries written before `held` and `acknowledge_deletes` were.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        (sent, delivered, lost) = (try c.decode(Int.self, forKey: .sent), try c.decode(Int.self, forKey: .delivered), try c.decode([String: Int].self, forKey: .lost))
        (afterAck, ackGone) = (try c.decode(Int.self, forKey: .afterAck), try c.decode(Int.self, forKey: .ackGone))
        held = try c.decodeIfPresent(Int.self, forKey: .held) ?? 0
        acknowledgeDeletes = try c.decodeIfPresent(Bool.self, forKey: .acknowledgeDeletes) ?? true
        (polls, emptyPolls, pollFailures) = (try c.decode(Int.self, forKey: .polls), try c.decode(Int.self, forKey: .emptyPolls), try c.decode(Int.self, forKey: .pollFailures))
        (bytesUp, bytesDown) = (try c.decode(Int.self, forKey: .bytesUp), try c.decode(Int.self, forKey: .bytesDown))
        listeners = try c.decodeIfPresent(Listeners.self, forKey: .listeners)
        notifications = try c.decodeIfPresent(NotificationReport.self, forKey: .notifications)
    }

    public var lostTotal: Int { lost.values.reduce(0, +) }

    /// The one loss a mailbox app is judged on, in the summary, report.html and `mailbox.loss` alike: messages whose
    /// recipient polled after they were stored and never got them (`not_fetched`: the backend lost them). The other
    /// reasons a message was not delivered are the policy's (`purged_unfetched`, `parked`), the recipient's refusal
    /// (`rejected_*`) or the run's end (`not_polled_since`: never had its chance), each shown by name.
    public var lostByBackend: Int { lost["not_fetched"] ?? 0 }

    /// `lostByBackend` ÷ `sent`, in percent (0 when nothing was sent).
    public var lossPercent: Double { sent > 0 ? Double(lostByBackend) / Double(sent) * 100 : 0 }

    /// Whether the accounting closes: every message sent is delivered or lost with a reason.
    public var closes: Bool { sent == delivered + lostTotal + held }

    /// ACK-then-delete held: nothing served again after its ACK, nothing gone before it.
    public var holds: Bool { afterAck == 0 && ackGone == 0 && closes }

    public var verdict: String {
        if !acknowledgeDeletes {
            guard closes else { return "the accounting does not close: \(sent) sent ≠ \(delivered) delivered + \(lostTotal) not delivered + \(held) held" }
            return "Mutual reveal: \(delivered) of \(sent) answers revealed to the partner, \(held) still awaiting the partner's answer at the end"
                + (lostTotal > 0 ? ", \(lostTotal) not delivered (\(lostByBackend) lost by the backend)" : "")
        }
        if holds { return "ACK-then-delete held: \(delivered) of \(sent) delivered and acknowledged, none served again after its ACK" }
        var parts: [String] = []
        if afterAck > 0 { parts.append("\(afterAck) message(s) still served after their ACK succeeded (not deleted on ACK)") }
        if ackGone > 0 { parts.append("\(ackGone) message(s) gone before their ACK") }
        if !closes { parts.append("the accounting does not close: \(sent) sent ≠ \(delivered) delivered + \(lostTotal) not delivered + \(held) held") }
        return parts.joined(separator: "; ")
    }
}
