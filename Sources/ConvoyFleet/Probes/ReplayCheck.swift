import ConvoyCrypto

/// What a receiving device checks before it shows a decrypted update
/// (greenbox-prd.md §4.4 "check the timestamp ts to prevent stale updates").
/// A sealed box does not say who sealed it, so the row's `sender_id` is all a
/// device knows of the sender: it shows updates only from active friends, and
/// from each friend only ones newer than the last it showed (by `seq` when the
/// payload carries one, else by `ts`), not older than `maxAge`, not from the future.
public struct ReplayCheck: Sendable {
    public enum Verdict: Sendable, Equatable, CustomStringConvertible {
        case accept
        case notAFriend
        /// Not newer than the last update shown from this sender.
        case stale
        case tooOld
        case fromTheFuture

        public var description: String {
            switch self {
            case .accept: "accepted"
            case .notAFriend: "rejected: the sender is not an active friend"
            case .stale: "rejected as stale: not newer than the last update from this sender"
            case .tooOld: "rejected: older than the freshness window"
            case .fromTheFuture: "rejected: timestamped in the future"
            }
        }
    }

    public var friends: Set<String>
    public var maxAge: Double
    public var maxSkew: Double
    private var last: [String: (seq: UInt64?, ts: Double)] = [:]

    public init(friends: Set<String>, maxAge: Double = 600, maxSkew: Double = 60) {
        (self.friends, self.maxAge, self.maxSkew) = (friends, maxAge, maxSkew)
    }

    /// Judges an update and, when it is accepted, remembers it.
    public mutating func check(sender: String, _ payload: LocationPayload, now: Double) -> Verdict {
        guard friends.contains(sender) else { return .notAFriend }
        guard payload.ts <= now + maxSkew else { return .fromTheFuture }
        guard payload.ts >= now - maxAge else { return .tooOld }
        if let previous = last[sender] {
            if let seq = payload.seq, let before = previous.seq {
                guard seq > before else { return .stale }
            } else {
                guard payload.ts > previous.ts else { return .stale }
            }
        }
        last[sender] = (payload.seq, payload.ts)
        return .accept
    }
}
