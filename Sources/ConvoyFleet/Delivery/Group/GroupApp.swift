import ConvoyCrypto
import ConvoyMetrics
import ConvoySodium
import ConvoyWire

/// The group shape (`Delivery/Group/`, Survale): one broadcast to the phone's group on a private channel, with presence;
/// groups formed in set-up, joined by request, ended by their owner; chat, media, an archive and its replay; direct
/// messages between members; what a group leaves purged a set time after it ends (`AppProfile+Groups.swift`).
public protocol GroupApp: LocationApp {
    /// Sets up group `number` (set-up, not measured): `members[0]` owns it, everyone joins it but those
    /// `joiningLater` (user ids), who ask to during the run (`askToJoin`).
    /// `serviceKey`: the project's, for apps whose users an administrator provisions.
    func formGroup(_ members: [Session], joiningLater: Set<String>, number: Int, serviceKey: String?,
                   via http: SupabaseHTTP) async throws(SupabaseError)

    /// Asks to join the group `session`'s user belongs to (Survale: a join request to the team's operation); the request's id.
    func askToJoin(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> String

    /// What the owner decided on request `id`, as its asker reads it: nil while undecided.
    func joinDecision(_ id: String, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool?

    /// The owner lets request `id` in.
    func approveJoin(_ id: String, owner session: Session, via http: SupabaseHTTP) async throws(SupabaseError)

    /// Requests to the owner's group not yet decided (what the owner's phone shows on coming back).
    func pendingJoinRequests(owner session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> [String]

    /// One tick's update for the whole group, as the app sends it (a broadcast on the group's channel):
    /// the bytes it sent, and the push's ref when the server will acknowledge it. A channel not
    /// joined now: `SupabaseError.Kind.notJoined`.
    func sendToGroup(_ update: OutgoingUpdate, from session: Session, realtime: RealtimeClient?,
                     via http: SupabaseHTTP) async throws(SupabaseError) -> (bytes: Int, ref: String?)

    /// A broadcast that arrived on the subscription, as an update for this phone.
    func incoming(broadcast: RealtimeClient.Broadcast) -> Incoming

    /// Direct messages (Survale: "DMs via ephemeral WebSocket relay (no storage)"): the members `userID` exchanges
    /// them with, and the channel of `userID` and one of them (one a pair); none: the app has no direct messages.
    func directPartners(of userID: String) -> [String]
    func directChannel(for userID: String, with partner: String) -> AppSubscription?

    /// Sends `message` to `userID` alone, over Realtime (nothing stores it); the frame's bytes.
    func sendDirect(_ message: GroupMessage, to userID: String, from session: Session, realtime: RealtimeClient?) throws(SupabaseError) -> Int

    /// What the phone tracks as its presence once subscribed; nil: none.
    func presence(for userID: String) -> [String: String]?

    /// The phone is done with its group: its owner ends it at the end of the run (unless it abandons it); a
    /// member leaves it during the run (and may ask to join again).
    func leaveGroup(_ session: Session, owner: Bool, via http: SupabaseHTTP) async throws(SupabaseError)

    /// How each group this run formed has ended, read with the service key, by its owner's user id.
    func groupEnds(serviceKey: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: GroupEnd]

    /// Every channel the phone joins (the first is `subscription(for:)`'s; Survale adds its chat channel).
    func subscriptions(for userID: String) -> [AppSubscription]

    /// The group's messages posted since `since` (Unix seconds) past `cursor`, oldest first, at most `limit`
    /// (Survale: its operation's `op_messages`): what a phone loads after a gap (`AppProfile+Chat.swift`).
    func missedMessages(for session: Session, since: Double, after cursor: Int64, limit: Int,
                        via http: SupabaseHTTP) async throws(SupabaseError) -> MissedMessages

    /// Posts a message to the phone's group (Survale: a chat line in `op_messages`); the request body's bytes.
    func sendMessage(_ message: GroupMessage, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int

    /// How often the phone stores its own positions for later (Survale: the replay archive), seconds; nil: never.
    var archiveEvery: Double? { get }

    /// Stores `fixes` (this phone's, oldest first) as the app keeps them for replay; the request body's bytes.
    func archive(_ fixes: [LocationPayload], from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int

    /// The after-action replay of `session`'s group as the app loads it (Survale §8: the archived positions and the
    /// chat, `page` rows a request, oldest first): what came back.
    func replay(as session: Session, page: Int, via http: SupabaseHTTP) async throws(SupabaseError) -> ReplayLoad

    /// The backend's id of `userID`'s group (Survale: its operation), for the retention check; nil: none.
    func groupID(of userID: String) -> String?

    /// What is left of group `group` as `token`'s holder reads it (a member, with `reader` its user id, or the
    /// service key): when it ended, and per kind how many items are readable (Survale: the operation's chat,
    /// archive and media, purged a set time after it ends).
    func groupRemains(_ group: String, reader: String?, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> GroupRemains

    /// Whether the phones can send photos and videos to their group (Survale's chat media).
    var sendsMedia: Bool { get }

    /// Stores one photo or video where the group can fetch it (Survale: a signed upload URL, then the bytes
    /// to it); `progress` hears the transfer. What the chat line then names, as `GroupMessage.media`.
    func uploadMedia(_ kind: MediaKind, bytes: [UInt8], seq: UInt64, from session: Session, via http: SupabaseHTTP,
                     progress: (@Sendable (HTTPProgress) -> Void)?) async throws(SupabaseError) -> MediaRef

    /// Fetches the media a chat line names, as a member (Survale: a signed download URL, then the GET); the bytes received.
    func fetchMedia(_ media: MediaRef, as session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int
}

extension GroupApp {
    public var shaped: ShapedApp { .group(self) }
}
