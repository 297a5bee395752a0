import ConvoyCrypto
import ConvoyWire

/// Whom a phone's tick goes to.
public enum Audience: Sendable, Equatable {
    /// Each active friend, sealed to that friend (Green Box: one row per friend in one bulk insert).
    case eachFriend
    /// The phone's group at once (Survale: one broadcast on the operation's channel); friends are the group's members.
    case group
}

/// Apps whose friends are pairs (Green Box) have no groups: these are never called for them.
extension AppProfile {
    public var audience: Audience { .eachFriend }

    public func formGroup(_ members: [Session], number: Int, serviceKey: String?, via http: SupabaseHTTP) async throws(SupabaseError) {
        throw SupabaseError(kind: .unexpectedResponse, message: "\(name) has no groups")
    }

    public func sendToGroup(_ update: OutgoingUpdate, from session: Session, realtime: RealtimeClient?,
                            via http: SupabaseHTTP) async throws(SupabaseError) -> (bytes: Int, ref: String?) {
        throw SupabaseError(kind: .unexpectedResponse, message: "\(name) has no groups")
    }

    public func incoming(broadcast: RealtimeClient.Broadcast) -> Incoming { .notMine }

    public func presence(for userID: String) -> [String: String]? { nil }

    public func leaveGroup(_ session: Session, owner: Bool, via http: SupabaseHTTP) async throws(SupabaseError) {}

    public func groupEnds(serviceKey: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: GroupEnd] { [:] }

    public func subscriptions(for userID: String) -> [AppSubscription] { [subscription(for: userID)] }

    public func sendMessage(_ message: GroupMessage, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        throw SupabaseError(kind: .unexpectedResponse, message: "\(name) has no group messages")
    }

    public var archiveEvery: Double? { nil }

    public func archive(_ fixes: [LocationPayload], from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int { 0 }
}

/// A message a phone posts to its group: Convoy's sequence number and intended send time, and its text.
public struct GroupMessage: Sendable, Equatable {
    public var seq: UInt64
    /// Intended send time, Unix nanoseconds.
    public var sentNanos: Int64
    public var text: String

    public init(seq: UInt64, sentNanos: Int64, text: String) { (self.seq, self.sentNanos, self.text) = (seq, sentNanos, text) }
}

/// How a group ended, as its backend recorded it.
public struct GroupEnd: Sendable, Equatable {
    public var ended: Bool
    /// The backend ended it (Survale: `end_reason = auto_end`), not its owner.
    public var byBackend: Bool
    /// When, Unix seconds.
    public var endedAt: Double?

    public init(ended: Bool, byBackend: Bool, endedAt: Double?) { (self.ended, self.byBackend, self.endedAt) = (ended, byBackend, endedAt) }
}
