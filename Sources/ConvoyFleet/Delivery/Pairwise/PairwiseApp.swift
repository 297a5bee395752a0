import ConvoyCrypto
import ConvoySodium
import ConvoyWire

/// The pairwise shape (`Delivery/Pairwise/`, Green Box): each update sealed to each friend, inserted as rows, pushed over
/// `postgres_changes`; caught up after a gap; kept by age and purged by the backend.
public protocol PairwiseApp: LocationApp, FriendApp {
    /// One tick's sealed updates as the app sends them (one request for Green
    /// Box's bulk insert, one a friend for an app that posts them apart): the requests made and their bodies' size.
    func send(_ updates: [OutgoingUpdate], from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Posted

    /// Catching up after a gap: a page of updates for `userID` created since
    /// `since` (Unix seconds) past `cursor`, oldest first.
    func catchUp(for userID: String, since: Double, after cursor: Int64, limit: Int, token: String,
                 via http: SupabaseHTTP) async throws(SupabaseError) -> CatchUpPage

    /// Makes `key` the one friends seal to (at sign-up, and again after a reinstall).
    func publishKey(_ key: PublicKey, session: Session, via http: SupabaseHTTP) async throws(SupabaseError)

    /// An invitation to be friends again after a reinstall; the code the friend accepts.
    func invite(preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> String

    /// After a reinstall, asks `friend` to accept again the way the app pairs during the run (Green Box `pairing: prd`:
    /// PRD §4.1's "friends re-accept requests", the friendship taken back to a new pending request the friend hears and
    /// accepts); false, the default: the app invites again with a code (`invite`).
    func requestAgain(_ friend: Invitee, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool

    /// Accepts `code` at `preference`.
    func accept(code: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError)

    /// The oldest updates `userID` can still read.
    func oldestUpdates(of userID: String, limit: Int, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate]

    /// Which of `ids` `userID` can still read.
    func presentUpdates(_ ids: [Int64], of userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Set<Int64>

    /// The oldest updates anyone has, read with the service key.
    func oldestUpdates(limit: Int, serviceKey: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate]

    /// The request that posts an update's `body` to `recipient` as `sender` (a replay probe's re-post).
    func updateRequest(sender: String, recipient: String, body: String) -> AppRequest
}

/// What a tick's send cost on the wire: how many requests, and their bodies' bytes.
public struct Posted: Sendable, Equatable {
    public var requests: Int
    public var bytes: Int

    public init(requests: Int, bytes: Int) { (self.requests, self.bytes) = (requests, bytes) }
}

extension PairwiseApp {
    public var shaped: ShapedApp { .pairwise(self) }

    public func requestAgain(_ friend: Invitee, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool { false }
}
