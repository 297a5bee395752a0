import ConvoyCrypto
import ConvoySodium
import ConvoyWire

/// Apps whose phones share no locations and push nothing on Realtime (QuickPic's messages, Closer's pairing):
/// the location half of `AppProfile`, answered once for them. A phone of such an app never calls these; a
/// scenario that would have it (migration, location thresholds) is refused when it is read.
public protocol SharesNoLocations: AppProfile {}

extension SharesNoLocations {
    public var sharesLocation: Bool { false }

    public func plaintext(of update: LocationPayload) -> LocationPayload { update }

    public func seal(_ update: LocationPayload, to recipient: PublicKey) throws(CryptoError) -> String {
        throw CryptoError.unsupportedVersion("\(name) shares no locations")
    }

    public func send(_ updates: [OutgoingUpdate], from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        throw SupabaseError(kind: .unexpectedResponse, message: "\(name) has no location updates")
    }

    public func subscription(for userID: String) -> AppSubscription { AppSubscription(topic: "", bindings: []) }

    public func incoming(_ change: RealtimeClient.Change) -> Incoming { .notMine }

    public func open(_ update: IncomingUpdate, with keys: BoxKeyPair) throws(CryptoError) -> LocationPayload {
        throw CryptoError.unsupportedVersion("\(name) shares no locations")
    }

    public func catchUp(for userID: String, since: Double, after cursor: Int64, limit: Int, token: String,
                        via http: SupabaseHTTP) async throws(SupabaseError) -> CatchUpPage {
        CatchUpPage(updates: [], bytes: 0, cursor: cursor)
    }

    public func oldestUpdates(of userID: String, limit: Int, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] { [] }

    public func presentUpdates(_ ids: [Int64], of userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Set<Int64> { [] }

    public func oldestUpdates(limit: Int, serviceKey: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] { [] }
}
