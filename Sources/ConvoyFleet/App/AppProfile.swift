import ConvoyCrypto
import ConvoySodium
import ConvoyWire

/// The seam between the phone and the app it runs (docs/architecture.md, "App
/// profiles"). The phone (`VirtualDevice`) keeps when it is online, where it
/// is, what it spent, what it sent and received, and when it acts; everything
/// an app's backend calls things — tables, topics, RPCs, payload encodings,
/// pairing — is the app's. Each method is one thing a real client of that app
/// does, so the phone counts it as load: its bytes, its latency, its failures.
///
/// This is the core every app has: its accounts, its keys, and its probe casts. How its updates reach a friend is
/// one of three protocols, each a shape of its own and declared in its room (`Delivery/Pairwise/PairwiseApp.swift`,
/// `Delivery/Group/GroupApp.swift`, `Delivery/Mailbox/MailboxApp.swift`), and `shaped` says which: an app implements
/// its own shape's requirements and no other's.
///
/// An app's names live in its own folder (`App/GreenBox/`); `scripts/check-imports`
/// fails the build when one appears elsewhere in ConvoyFleet.
public protocol AppProfile: Sendable {
    /// The scenario's `app:` value.
    var name: String { get }

    /// The app as its delivery shape (given by the shape's protocol: `.pairwise(self)` for a `PairwiseApp`).
    var shaped: ShapedApp { get }

    // MARK: Accounts (`AppProfile+Accounts.swift`: GoTrue's unless the app has its own)

    /// Signs up (through the admin API with `adminKey`, for projects that confirm emails) and publishes
    /// `keys`' public key as the app does after sign-up; the session.
    func signUp(email: String, password: String, keys: BoxKeyPair, adminKey: String?, via http: SupabaseHTTP) async throws(SupabaseError) -> Session

    /// What `signUp` does after the account is made (Green Box: publishes its key; Survale: nothing), done again when the answer to a
    /// sign-up was lost and the device signed in instead (`Onboarding.signUp`).
    func finishSignUp(keys: BoxKeyPair, session: Session, via http: SupabaseHTTP) async throws(SupabaseError)

    /// Signs in again with the account's password.
    func signIn(email: String, password: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Session

    /// A new session for the refresh token (which rotates: keep the new one).
    func refresh(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Session

    /// Logs out: the session's tokens are refused from then on.
    func signOut(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError)

    /// Whether `userID` has published its key (a shard waits for another shard's devices).
    func hasPublishedKey(_ userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool

    // MARK: Probes (`AppProfile+Probes.swift`)

    /// Sets up a standalone probe cast as the app relates its users (a friend app: two friendships; a group app: a group).
    func formProbeCast(_ cast: ProbeCastSessions, serviceKey: String?, via http: SupabaseHTTP) async throws(SupabaseError)

    /// Placeholder values the app knows of a cast, by role name → user id (Survale: `victim.operation`); default none.
    func probeValues(roles: [String: String]) -> [String: String]

    /// Placeholder values made with the cast's key pairs, by role name (QuickPic: messages sealed and signed
    /// between them, as a hostile client could make them); default none.
    func probeMessages(keys: [String: BoxKeyPair]) -> [String: String]
}

/// An app as its delivery shape: the one protocol of the three it implements (`AppProfile.shaped`).
public enum ShapedApp: Sendable {
    case pairwise(any PairwiseApp)
    case group(any GroupApp)
    case mailbox(any MailboxApp)

    public var shape: DeliveryShape {
        switch self {
        case .pairwise: .pairwise
        case .group: .group
        case .mailbox: .mailbox
        }
    }
}

extension AppProfile {
    /// How an update reaches a friend (`Delivery/DeliveryShape.swift`).
    public var shape: DeliveryShape { shaped.shape }

    /// The app as one whose phones share their positions and hear them on Realtime (pairwise and group apps); nil for
    /// a mailbox app, whose phones share none (QuickPic's messages, Closer's answers) and run no GPS.
    public var locations: (any LocationApp)? {
        switch shaped {
        case .pairwise(let app): app
        case .group(let app): app
        case .mailbox: nil
        }
    }

    /// The app as one whose users are friends in pairs (pairwise and mailbox apps); nil for a group app.
    public var friends: (any FriendApp)? {
        switch shaped {
        case .pairwise(let app): app
        case .mailbox(let app): app
        case .group: nil
        }
    }

    /// Whether its phones share their position (and so run the GPS); QuickPic's and Closer's do not.
    public var sharesLocation: Bool { locations?.sharesPositions ?? false }

    /// Whether friends pair during the run on the phones (`FriendApp.pairsDuringRun`).
    public var pairsDuringRun: Bool { friends?.pairsDuringRun ?? false }

    /// Whether each user has at most one friend (`FriendApp.friendsAreCouples`).
    public var friendsAreCouples: Bool { friends?.friendsAreCouples ?? false }

    /// Whether its backend issues invite codes that expire (`FriendApp.issuesInviteCodes`).
    public var issuesInviteCodes: Bool { friends?.issuesInviteCodes ?? false }
}

/// Apps whose phones share their position and hear each other's on Realtime: what a pairwise and a group app have
/// alike (the plaintext, its seal and its opening, the subscription).
public protocol LocationApp: AppProfile {
    /// What a recipient will decrypt of `update` (which carries Convoy's
    /// `seq` and `sent_ns`): all of it, or the app's own keys alone. Without a
    /// `seq` the phone keeps what it sealed for whom (`SentUpdates`) so that
    /// the recipient can still find its send time.
    func plaintext(of update: LocationPayload) -> LocationPayload

    /// `update` sealed for `recipient`, as the app's wire format has it. The
    /// phone calls this once per friend per tick and times it: as `seal` for an
    /// app that `encrypts`, as `encode` for one that sends positions in the clear.
    func seal(_ update: LocationPayload, to recipient: PublicKey) throws(CryptoError) -> String

    /// Whether its plaintext carries the phone's battery level (default false; a declared app's `{{battery.percent}}`): the
    /// phone reads its battery model's level for each tick only then.
    var carriesBattery: Bool { get }

    /// Whether its phones share their positions at all (default true; a declared app of actions alone: false, and its
    /// phones run no GPS and make only their actions).
    var sharesPositions: Bool { get }

    /// Whether `seal` and `open` encrypt and decrypt (default true; Survale's positions travel as plain JSON):
    /// the phone times them as `seal`/`open` or as `encode`/`decode`, and names them so in the results.
    var encrypts: Bool { get }

    /// What the phone subscribes to on its Realtime connection.
    func subscription(for userID: String) -> AppSubscription

    /// A change that arrived on the subscription, as an update for this phone.
    func incoming(_ change: RealtimeClient.Change) -> Incoming

    /// Opens an update with the phone's key pair and validates it.
    func open(_ update: IncomingUpdate, with keys: BoxKeyPair) throws(CryptoError) -> LocationPayload
}

extension LocationApp {
    public var encrypts: Bool { true }
    public var sharesPositions: Bool { true }
    public var carriesBattery: Bool { false }
}

/// Apps whose users are friends in pairs, made in set-up or on the phones during the run (pairwise and mailbox apps;
/// `AppProfile+Pairing.swift`).
public protocol FriendApp: AppProfile {
    /// One friendship: the inviter's side, then, unless the invitee leaves it at
    /// "decide later", the invitee's. Each side shares at its own preference.
    func befriend(_ request: FriendRequest, via http: SupabaseHTTP) async throws(SupabaseError)

    /// How many active friendships the token's user is in.
    func activeFriendships(token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Int

    /// The published keys of `userIDs` (as the app reads them before sharing), by user id.
    func publicKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: PublicKey]

    /// The keys `userIDs` published, by user id, in the one read the app makes of them: the box key and, for an app
    /// whose messages are signed (QuickPic's `GET /friends`), the signing key. Default: `publicKeys`, no signing key.
    func friendKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: FriendKeys]

    /// True when friends pair during the run, on the phones (`requestFriendship`, `acceptFriendship`,
    /// `.pairing` events); false when `befriend` pairs them in set-up.
    var pairsDuringRun: Bool { get }

    /// Whether each user has at most one friend (Closer's couples): a hostile device's victim is then a member of
    /// another pair, not a friend of its friend. Default false.
    var friendsAreCouples: Bool { get }

    /// Who shares with whom once a friendship is active: both (the default), or one side alone (a follow).
    var sharing: LinkSharing { get }

    /// Whether its backend issues invite codes that expire (Green Box's invite links, Closer's pairing codes), whose
    /// lifetime `social.invite_ttl` sets on the embedded backend. Default false: friends ask by id or username.
    var issuesInviteCodes: Bool { get }

    /// What the inviter's app does before it asks `invitee` (the friend's id and address): QuickPic looks the
    /// friend up (`GET /users/:username`: true, timed as `pairing_lookup`); Closer makes the couple key on the
    /// phone, off the async pool (no request: false, so `pairing_request` stays the call). Default: nothing, false.
    func prepareRequest(_ invitee: Invitee, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool

    /// The inviter asks `invitee` to be friends at `preference`; the request's id.
    func requestFriendship(to invitee: Invitee, preference: String, from session: Session,
                           via http: SupabaseHTTP) async throws(SupabaseError) -> String

    /// The invitee accepts request `id` at its own `preference`.
    func acceptFriendship(_ id: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError)

    /// The invitee declines request `id` (QuickPic: `POST /friends/reject`); an app with no "no" leaves it
    /// pending, as Green Box's "Decline/Decide Later" does (the default).
    func declineFriendship(_ id: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError)

    /// Requests to `userID` not yet accepted (what a phone shows right after onboarding or a gap).
    func pendingRequests(to userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent]

    /// Requests `userID` made that have been accepted (what a phone learns on subscribing again,
    /// when it was not listening as they were).
    func acceptedRequests(by userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent]

    /// Makes `friend` an active friend of each of `others` (a probe cast's set-up; `formProbeCast` by default).
    func befriendForProbes(_ friend: Session, with others: [Session], via http: SupabaseHTTP) async throws(SupabaseError)
}

/// One friendship to make: each side's token and preference; `pending`: the
/// invitee decides later.
public struct FriendRequest: Sendable {
    public var inviter: Session
    public var invitee: Session
    public var inviterPreference: String
    public var inviteePreference: String
    public var pending: Bool
    /// The invitee declines it (apps with a reject: QuickPic); the two are not friends.
    public var declined = false

    public init(inviter: Session, invitee: Session, inviterPreference: String, inviteePreference: String, pending: Bool) {
        (self.inviter, self.invitee, self.inviterPreference, self.inviteePreference, self.pending)
            = (inviter, invitee, inviterPreference, inviteePreference, pending)
    }
}

/// One update for one recipient (or, broadcast, for the group), as the app's wire carries it: `body` is a
/// sealed box (Base64) for an app that encrypts, the position's plain JSON for one that does not (Survale).
public struct OutgoingUpdate: Sendable {
    public var recipient: String
    public var body: String

    public init(recipient: String, body: String) { (self.recipient, self.body) = (recipient, body) }
}

/// An update as it reached a phone: who sent it, its body as the wire carried it (sealed, or plain: `OutgoingUpdate`),
/// and, where the backend has them, its id and when it was stored (Unix seconds).
public struct IncomingUpdate: Sendable {
    public var sender: String
    public var body: String
    public var id: Int64?
    public var createdAt: Double?

    public init(sender: String, body: String, id: Int64? = nil, createdAt: Double? = nil) {
        (self.sender, self.body, self.id, self.createdAt) = (sender, body, id, createdAt)
    }
}

/// What a change on the subscription is to the phone.
public enum Incoming: Sendable {
    case update(IncomingUpdate)
    case pairing(PairingEvent)
    /// The phone's group has ended (its owner ended it, or the backend did): it stops sharing.
    case groupEnded
    /// A message to the group from `sender` (Survale: a chat line).
    case groupMessage(sender: String, GroupMessage)
    /// Someone asks to join the owner's group: the request's id (Survale: a join request the case agent sees).
    case joinRequest(String)
    /// A direct message to this phone alone from `sender`, a member of its group (Survale's ephemeral DMs).
    case directMessage(sender: String, GroupMessage)
    /// Something the app's client does not act on (another table, another event).
    case notMine
    /// An update the phone cannot read (a column missing).
    case malformed
}

/// A page of updates fetched to catch up: the updates, the response's size,
/// and the cursor to continue from.
public struct CatchUpPage: Sendable {
    public var updates: [IncomingUpdate]
    public var bytes: Int
    public var cursor: Int64

    public init(updates: [IncomingUpdate], bytes: Int, cursor: Int64) { (self.updates, self.bytes, self.cursor) = (updates, bytes, cursor) }
}

/// An update the backend still holds: its id and creation time.
public struct StoredUpdate: Sendable {
    public var id: Int64
    /// Unix seconds.
    public var createdAt: Double
    /// As the backend wrote it.
    public var createdText: String

    public init(id: Int64, createdAt: Double, createdText: String) { (self.id, self.createdAt, self.createdText) = (id, createdAt, createdText) }
}

/// A Realtime subscription: the channel's topic, its change bindings and how it is joined (private, presence key, ack).
public struct AppSubscription: Sendable, Equatable {
    public var topic: String
    public var bindings: [RealtimeClient.Binding]
    public var options: RealtimeClient.ChannelOptions

    /// The phone tracks its presence on this channel once subscribed (`GroupApp.presence(for:)`).
    public var tracksPresence: Bool
    /// The group's messages arrive here: after a loss of this channel the phone loads what it missed (`missedMessages`).
    public var carriesMessages: Bool

    public init(topic: String, bindings: [RealtimeClient.Binding], options: RealtimeClient.ChannelOptions = .init(), tracksPresence: Bool = false,
                carriesMessages: Bool = false) {
        (self.topic, self.bindings, self.options, self.tracksPresence, self.carriesMessages) = (topic, bindings, options, tracksPresence, carriesMessages)
    }
}

/// A request an app makes, as a probe replays it: method, path under the
/// target, extra headers and a JSON object body of string fields.
public struct AppRequest: Sendable {
    public var method: String
    public var path: String
    public var headers: [(name: String, value: String)]
    public var fields: [(name: String, value: String)]
}
