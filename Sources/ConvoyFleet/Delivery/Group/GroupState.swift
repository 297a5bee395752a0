import ConvoyCrypto
import ConvoyGeo

/// What a phone of a group app keeps (Survale: one broadcast to the team on a private channel,
/// presence, chat and media in the group, an archive). The phone holds one, `VirtualDevice.group`;
/// only this room's code (`VirtualDevice+Group`, `+JoinRequest`, `+Media`, `+ChatCatchUp`) reads it.
struct GroupState: Sendable {
    /// Its place in its group (nil for a phone of another shape).
    let role: GroupRole?
    /// Each teammate's last position and 10-minute trail, as the app draws them.
    var teamMap = TeamMap()
    /// Broadcasts awaiting the server's ack (by ref, when sent), and whether it saw its group end.
    var awaitingAck: [String: (sent: Double, entry: Int)] = [:]
    var sawGroupEnd = false
    /// As its owner, its end of the group failed and is tried again (`VirtualDevice.endGroup`).
    var ending = false
    /// The (sender, seq) pairs of group messages it has received.
    var messagesSeen: Set<String> = []
    /// The chat it owes itself since a gap (`VirtualDevice+ChatCatchUp`).
    var missedChat = MissedChat()
    /// Chat lines and media waiting to be tried again (`VirtualDevice+Media`).
    var chatQueue: ChatRetryQueue<ChatPost>
    /// Its own positions waiting to be archived (`GroupApp.archiveEvery`).
    var archiveBuffer: [LocationPayload] = []
    /// Joining by request: its request and when it asked (until let in), when it asked (until on the
    /// group's channel), and, as an owner, the requests it is deciding.
    var joinRequest: (id: String, askedAt: Double)?
    var joinAskedAt: Double?
    /// When it asked, on the network links' clock (`join_channel_online`).
    var joinAskedOnLinks = 0.0
    var deciding: Set<String> = []
    /// It left its group for a while (`leaveForAWhile`), and whether it is on its way back onto the channels.
    var outOfGroup = false
    var rejoining = false
    /// Its time to leave for a while came while it was not on its group's channel yet (still asking, being let in or
    /// connecting): it leaves once there.
    var leaveDue = false
    /// What it has put in its group that the backend keeps (messages posted, positions archived): the
    /// retention check expects all of it readable until the group's purge is due.
    var contributed: [GroupItem: Int] = [:]
    /// When it closed its Realtime connection having been subscribed (on its group's channel), wall clock.
    var disconnectedAt: Double?
    /// Its count of direct messages sent, the pair channels it has opened on its connection (by partner), and
    /// the draws of when and to whom it writes, a stream of their own: a run with direct messages draws every other
    /// schedule as the same run without them (`VirtualDevice+Direct`).
    var directSeq: UInt64 = 0
    var directOpen: [String: AppSubscription] = [:]
    var directRNG: SeededGenerator

    /// Nothing owed: no chat being loaded or owed since a gap, no end of its group still being tried.
    var isSettled: Bool { !missedChat.running && !missedChat.isOwed && !ending }

    // MARK: The group's decisions (the phone does what they return: `VirtualDevice+Group`, `+JoinRequest`)

    /// What a reply to one of its broadcasts means.
    enum PushReply: Equatable {
        /// The server acknowledged the broadcast sent at `sentAt` (the run's clock).
        case acknowledged(sentAt: Double)
        /// Its channel was not joined within the push timeout: ledger entry `entry` never left the phone.
        case notJoined(entry: Int)
        /// Another reply to a broadcast it awaited (an error): nothing to time or to fail.
        case other
        /// A reply to nothing it awaits (an ack already taken, another push).
        case unknown
    }

    /// A reply with `status` to push `ref`.
    mutating func replied(ref: String, status: String) -> PushReply {
        guard let sent = awaitingAck.removeValue(forKey: ref) else { return .unknown }
        switch status {
        case "ok": return .acknowledged(sentAt: sent.sent)
        case "timeout": return .notJoined(entry: sent.entry)
        default: return .other
        }
    }

    /// Its group ended (the backend said so, or its channel refused it for good): true the first time, when the phone
    /// stops sharing; false after.
    mutating func sawEnd() -> Bool {
        guard !sawGroupEnd else { return false }
        sawGroupEnd = true
        return true
    }

    /// As its group's owner, it heard request `id` to join: how long after to decide it (drawn by the phone from the
    /// range returned), or nil when it does not decide it (not the owner, its group ended, or already deciding it).
    mutating func heard(joinRequest id: String) -> ClosedRange<Double>? {
        guard let role, role.owner, !sawGroupEnd, deciding.insert(id).inserted else { return nil }
        return role.approveAfter
    }

    init(role: GroupRole?, chatRetry: ChatRetryQueue<ChatPost>.Policy, seed: UInt64) {
        self.role = role
        chatQueue = ChatRetryQueue(policy: chatRetry)
        directRNG = SeededGenerator(seed: seed, stream: 0xD1EC7)
    }
}
