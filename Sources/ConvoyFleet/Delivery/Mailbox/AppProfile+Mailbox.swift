import ConvoyCrypto
import ConvoyMetrics
import ConvoySodium
import ConvoyWire

/// A message from one phone to one friend as the phone composes it; the app encodes it (QuickPic: UTF-8
/// text, or a PNG gzipped) and carries Convoy's sequence number and send time inside what it encrypts.
public struct DirectMessage: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        case text, photo
    }

    public var kind: Kind
    /// The sender's count of messages, one sequence for all its friends.
    public var seq: UInt64
    /// Intended send time, Unix nanoseconds.
    public var sentNanos: Int64
    /// How big the encoded content is meant to be (a photo's file), bytes; what the recipient decoded, on arrival.
    public var size: Int

    public init(kind: Kind, seq: UInt64, sentNanos: Int64, size: Int) {
        (self.kind, self.seq, self.sentNanos, self.size) = (kind, seq, sentNanos, size)
    }
}

/// A message sealed for one recipient, as the app posts it: its ciphertext and the sender's signature over it
/// (empty for apps that sign nothing), base64 where the wire wants it is the app's business.
public struct SealedMessage: Sendable, Equatable {
    public var recipient: String
    public var kind: DirectMessage.Kind
    public var ciphertext: [UInt8]
    public var signature: [UInt8]

    public init(recipient: String, kind: DirectMessage.Kind, ciphertext: [UInt8], signature: [UInt8]) {
        (self.recipient, self.kind, self.ciphertext, self.signature) = (recipient, kind, ciphertext, signature)
    }
}

/// What a mailbox request moved: the message's id (a post), bytes up and down (headers included).
public struct MailboxReceipt: Sendable, Equatable {
    public var id: String?
    /// When the backend stored it (a post), Unix seconds.
    public var createdAt: Double?
    public var bytesUp: Int
    public var bytesDown: Int

    public init(id: String? = nil, createdAt: Double? = nil, bytesUp: Int, bytesDown: Int) {
        (self.id, self.createdAt, self.bytesUp, self.bytesDown) = (id, createdAt, bytesUp, bytesDown)
    }
}

/// A pending message as the mailbox lists it.
public struct MailboxItem: Sendable, Equatable {
    public var id: String
    public var sender: String
    /// When the backend stored it, Unix seconds (its clock).
    public var createdAt: Double
    public var sealed: SealedMessage

    public init(id: String, sender: String, createdAt: Double, sealed: SealedMessage) {
        (self.id, self.sender, self.createdAt, self.sealed) = (id, sender, createdAt, sealed)
    }
}

/// One poll's answer: the messages (oldest first), those the phone could not read (skipped, counted), and what it moved.
public struct MailboxPage: Sendable {
    public var items: [MailboxItem]
    public var malformed: Int
    public var bytesUp: Int
    public var bytesDown: Int
    /// Ids of this phone's own held messages it let go of at this poll (`MailboxApp.holdsUntilAnswered`: Closer
    /// releases an answer's key once the partner's answer is there).
    public var released: [String] = []

    public init(items: [MailboxItem], malformed: Int = 0, bytesUp: Int, bytesDown: Int) {
        (self.items, self.malformed, self.bytesUp, self.bytesDown) = (items, malformed, bytesUp, bytesDown)
    }
}

/// What most friend apps do the same way: one read of the friends' box keys, no signing key.
extension FriendApp {
    public func friendKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: FriendKeys] {
        try await publicKeys(of: userIDs, token: token, via: http).mapValues { FriendKeys(box: $0) }
    }
}

/// A mailbox app's reads are polls, and a message is readable once posted, unless it says otherwise.
extension MailboxApp {
    public func openListener(session: Session, via http: SupabaseHTTP, proxy: TunnelProxy?,
                             pushed: @escaping @Sendable (MailboxPush) -> Void) async throws(SupabaseError) -> (any MailboxListener)? {
        nil
    }

    public func notifications(until end: Double) -> NotificationReport? { nil }

    public var holdsUntilAnswered: Bool { false }
}
