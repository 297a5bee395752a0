import ConvoyCrypto
import ConvoySodium
import ConvoyWire

/// What Survale does not have: keys, pairwise friendships, per-friend rows and
/// their retention (its purge acts on ended operations, not on rows by age).
/// The run never calls these for a group app; a scenario that would (a
/// `retention:` check) is refused when it is read. Probe casts are operations
/// (`SurvaleApp+Probes.swift`), so `befriendForProbes` is never called either.
extension SurvaleApp {
    /// Nothing to publish: the agency provisions the user in `formGroup`.
    public func publishKey(_ key: PublicKey, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {}

    public func hasPublishedKey(_ userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool { true }

    public func befriend(_ request: FriendRequest, via http: SupabaseHTTP) async throws(SupabaseError) { throw Self.none("pairwise friends") }

    public func activeFriendships(token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Int { throw Self.none("pairwise friends") }

    public func publicKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: PublicKey] {
        throw Self.none("public keys")
    }

    public func invite(preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        throw Self.none("friend invitations")
    }

    public func accept(code: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        throw Self.none("friend invitations")
    }

    public var pairsDuringRun: Bool { false }

    public func requestFriendship(to invitee: Invitee, preference: String, from session: Session,
                                  via http: SupabaseHTTP) async throws(SupabaseError) -> String { throw Self.none("friendship requests") }

    public func acceptFriendship(_ id: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        throw Self.none("friendship requests")
    }

    public func pendingRequests(to userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] { [] }

    public func acceptedRequests(by userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] { [] }

    public func send(_ updates: [OutgoingUpdate], from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        throw Self.none("per-friend rows (it broadcasts to the operation)")
    }

    public func oldestUpdates(of userID: String, limit: Int, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] {
        throw Self.none("rows kept by age")
    }

    public func presentUpdates(_ ids: [Int64], of userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Set<Int64> {
        throw Self.none("rows kept by age")
    }

    public func oldestUpdates(limit: Int, serviceKey: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] {
        throw Self.none("rows kept by age")
    }

    public func befriendForProbes(_ friend: Session, with others: [Session], via http: SupabaseHTTP) async throws(SupabaseError) {
        throw Self.none("pairwise probe casts")
    }

    public func updateRequest(sender: String, recipient: String, body: String) -> AppRequest {
        AppRequest(method: "POST", path: "/rest/v1/rpc/none", headers: [], fields: [])
    }

    static func none(_ what: String) -> SupabaseError {
        SupabaseError(kind: .unexpectedResponse, message: "Survale has no \(what)")
    }
}
