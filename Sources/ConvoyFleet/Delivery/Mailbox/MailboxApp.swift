import ConvoyCrypto
import ConvoyMetrics
import ConvoySodium
import ConvoyWire

/// The mailbox shape (`Delivery/Mailbox/`, QuickPic, Closer): each message sealed (and signed) to one friend, stored by
/// the backend in the recipient's mailbox until the phone, polling or listening, fetches and acknowledges it; no
/// Realtime, no positions (`AppProfile+Mailbox.swift`).
public protocol MailboxApp: FriendApp {
    /// What the phone sends `friend` now: `message` encoded as the app encodes it (a text, a photo), sealed to `friend`
    /// and signed by the sender's keys (QuickPic); or nil when the app has nothing to send (Closer: no question today,
    /// or today's answered already). An app with state per sender (Closer's) composes here.
    func composeDirect(_ message: DirectMessage, to friend: Friend, from session: Session, keys: BoxKeyPair) throws(CryptoError) -> SealedMessage?
    /// A listener app's held connections (Closer's: Firestore's Listen, and FCM's), opened when the phone comes online:
    /// the backend pushes what changed down them, and `pushed` hears each message. The app's looks read what was
    /// pushed, not the wire (docs/battery.md, "Listeners and polls"). nil, the default: the app polls (QuickPic).
    func openListener(session: Session, via http: SupabaseHTTP, proxy: TunnelProxy?,
                      pushed: @escaping @Sendable (MailboxPush) -> Void) async throws(SupabaseError) -> (any MailboxListener)?
    /// The notifications the app's backend owed the run's phones, and what came of them, at `end` (the run's clock,
    /// Unix seconds): Closer's outcome reminders. nil, the default: the app's phones get none.
    func notifications(until end: Double) -> NotificationReport?
    /// Whether a message waits for its recipient to answer before it can be read (Closer's mutual reveal): one still
    /// held at the end is awaiting the partner, not lost. Default false.
    var holdsUntilAnswered: Bool { get }

    /// Posts a sealed message to its recipient's mailbox; the message's id and what the request moved.
    func postDirect(_ message: SealedMessage, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> MailboxReceipt

    /// The oldest pending messages of the session's user, at most `limit` (fetching deletes nothing).
    func fetchMailbox(limit: Int, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> MailboxPage

    /// Verifies the sender's signature, then opens and decodes a fetched message (the friend's keys as read).
    func openDirect(_ item: MailboxItem, from friend: Friend, keys: BoxKeyPair) throws(CryptoError) -> DirectMessage

    /// Acknowledges message `id`: the backend deletes it. What the request moved.
    func acknowledge(_ id: String, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> MailboxReceipt
}

extension MailboxApp {
    public var shaped: ShapedApp { .mailbox(self) }
}

/// One message down a phone's held connection.
public struct MailboxPush: Sendable {
    /// Its size on the wire.
    public var bytes: Int
    /// Whether it changed what the phone reads (the phone looks at once).
    public var changed: Bool
    /// A notification (FCM's): its kind (`outcome_day_30`, `partner_answered`), and for one the backend owed at a time,
    /// that time (Unix seconds).
    public var notification: String?
    public var dueAt: Double?

    public init(bytes: Int, changed: Bool, notification: String? = nil, dueAt: Double? = nil) {
        (self.bytes, self.changed, self.notification, self.dueAt) = (bytes, changed, notification, dueAt)
    }
}

/// A phone's held connection to its mailbox app's backend (`MailboxApp.openListener`).
public protocol MailboxListener: Sendable {
    /// Whether it is still open (once closed, the phone opens another).
    var isOpen: Bool { get }
    /// Bytes it has carried each way so far.
    var bytes: (up: Int, down: Int) { get }
    /// A keepalive ping, sent when the connection has carried nothing for `MailboxState.keepalive` seconds.
    func ping()
    func close()
}
