import ConvoySodium
import ConvoyWire
import Foundation

/// A virtual device's account: who it is on the backend, and its key pair.
/// Email, password, tokens and the secret key are secrets: the description
/// leaves them out.
public struct DeviceAccount: Sendable, CustomStringConvertible {
    public let index: Int
    public let email: String
    public let password: String
    public var session: Session
    public let keys: BoxKeyPair
    /// Key pairs this device had before it reinstalled (oldest first).
    public var previousKeys: [BoxKeyPair] = []

    public var userID: String { session.userID }
    public var description: String { "DeviceAccount(#\(index), user \(session.userID), \(keys.publicKey.base64))" }
}

/// One side of a friendship, as a device knows it after pairing.
public struct Friend: Sendable, Equatable {
    public let index: Int
    public let userID: String
    /// The key sealed boxes go to (nil for an app whose device keys are not X25519: Closer's P-256, `deviceKey`).
    public let publicKey: PublicKey?
    /// How this device shares with the friend (`precise` or `general`).
    public let iShare: String
    /// Whether the friendship is active (false: the invite was left at "decide later").
    public let active: Bool
    /// The Ed25519 key the friend signs its messages with, for apps that sign (`FriendApp.friendKeys`).
    public var signingKey: PublicKey? = nil
    /// The friend's device key in its app's own form (Closer: an uncompressed P-256 point), for apps with one.
    public var deviceKey: [UInt8]? = nil
    /// Whether this device seals its updates to the friend, and whether it hears the friend's (`LinkSharing`: both,
    /// unless the app's links are one-directional).
    public var sendsTo = true
    public var hearsFrom = true

    /// The same friend, sealed to `key` from now on.
    func with(publicKey key: PublicKey) -> Friend {
        var f = Friend(index: index, userID: userID, publicKey: key, iShare: iShare, active: active, signingKey: signingKey, deviceKey: deviceKey)
        (f.sendsTo, f.hearsFrom) = (sendsTo, hearsFrom)
        return f
    }

    /// Whether it is sealed to and heard from, as `sharing` has it for this device's side of the link.
    mutating func share(_ sharing: LinkSharing, asInviter: Bool) {
        (sendsTo, hearsFrom) = (sharing.sends(asInviter: asInviter), sharing.hears(asInviter: asInviter))
    }

    /// Active, and sealed to: whom a tick goes to.
    public var sharedWith: Bool { active && sendsTo }
}

/// Everything before sharing (greenbox-prd.md §4–5): sign up, generate a key
/// pair, publish the public key, then make friends as the social graph says,
/// each side with its own sharing preference, the way the app does each.
public struct Onboarding: Sendable {
    public let app: any AppProfile
    public let engine: HTTPEngine
    public let target: SupabaseTarget
    /// Makes this run's emails unique, so runs can share a backend.
    public let runID: String
    /// Sign up through the admin API with this service key (a confirmed user, then a password sign-in), for
    /// projects that confirm emails; nil: `/signup` as the app does.
    public var adminKey: String?
    /// How many times a sign-up that got no answer is tried again (`signUp`).
    public var noAnswerRetries = 4

    public init(engine: HTTPEngine, target: SupabaseTarget, runID: String, app: any AppProfile = GreenBoxApp()) {
        (self.engine, self.target, self.runID, self.app) = (engine, target, runID, app)
    }

    /// The app as one whose users are friends in pairs, for `pair` (a group app's teams are formed by its shape's set-up,
    /// which never calls it).
    var friendApp: any FriendApp {
        guard let friends = app.friends else { preconditionFailure("\(app.name)'s users are not friends in pairs") }
        return friends
    }

    /// Device `index`'s email: unique to the run, the same on every shard.
    public func email(_ index: Int) -> String { "convoy-\(runID)-\(index)@convoy.test" }

    /// Signs device `index` up and publishes its public key; with
    /// no `password`, a random one (a sharded run derives it: `Shard.password`).
    ///
    /// A sign-up that gets no answer (a reset on a bad network, a gateway's 502–504) may have made the account
    /// before the answer was lost, so it is not simply sent again: the device signs in with the same password and
    /// does the rest of the sign-up again (`AppProfile.finishSignUp`), or, when there is no such account, signs up
    /// again; up to `noAnswerRetries` times, 0.2 s, 0.4 s, 0.8 s … apart. `retried` is called before each.
    public func signUp(_ index: Int, password given: String? = nil, on connection: HTTPConnection? = nil,
                       retried: @Sendable (SupabaseError) -> Void = { _ in }) async throws -> DeviceAccount {
        let http = SupabaseHTTP(engine: engine, target: target, connection: connection)
        let email = email(index)
        let password = given ?? Data(Sodium.randomBytes(18)).base64EncodedString()
        let keys = try BoxKeyPair()
        var attempt = 0
        while true {
            switch await signUp(email: email, password: password, keys: keys, resuming: attempt > 0, via: http) {
            case .success(let session):
                return DeviceAccount(index: index, email: email, password: password, session: session, keys: keys)
            case .failure(let error) where error.gotNoAnswer && attempt < noAnswerRetries:
                attempt += 1
                retried(error)
                try await Task.sleep(for: .milliseconds(100 << attempt))
            case .failure(let error):
                throw error
            }
        }
    }

    func signUp(email: String, password: String, keys: BoxKeyPair, resuming: Bool, via http: SupabaseHTTP) async -> Result<Session, SupabaseError> {
        do {
            if resuming { return .success(try await resumeSignUp(email: email, password: password, keys: keys, via: http)) }
            return .success(try await app.signUp(email: email, password: password, keys: keys, adminKey: adminKey, via: http))
        } catch {
            return .failure(error)
        }
    }

    /// A sign-up after one that got no answer: signed in, when the lost attempt made the account, and finished;
    /// made again when it did not (the sign-in refused: 400 or 401, 403, 404).
    func resumeSignUp(email: String, password: String, keys: BoxKeyPair, via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        let session: Session
        do {
            session = try await app.signIn(email: email, password: password, via: http)
        } catch where [400, 401, 403, 404].contains(error.status) {
            return try await app.signUp(email: email, password: password, keys: keys, adminKey: adminKey, via: http)
        }
        try await app.finishSignUp(keys: keys, session: session, via: http)
        return session
    }

    /// Creates every friendship of `graph` as the app befriends: the inviter's
    /// side with its preference, then (unless the pair is pending) the invitee's
    /// with its own. `preference(a, b)` is how device `a`
    /// shares with device `b` (`precise` or `general`). Returns each device's
    /// friends with their published keys.
    public func pair(_ graph: SocialGraph, accounts: [DeviceAccount], preference: @escaping @Sendable (Int, Int) -> String,
                     concurrency: Int = 32) async throws -> [[Friend]] {
        let http = SupabaseHTTP(engine: engine, target: target)
        let app = friendApp
        try await withThrowingTaskGroup(of: Void.self) { group in
            var started = 0
            for p in graph.pairs {
                if started >= concurrency { try await group.next() }
                started += 1
                group.addTask {
                    try await Self.befriend(p, inviter: accounts[p.inviter].session, invitee: accounts[p.invitee].session,
                                            preference: preference, app: app, http: http)
                }
            }
            try await group.waitForAll()
        }
        // Each device's friends' keys, as the app reads them (users are readable by any user).
        var friends: [[Friend]] = Array(repeating: [], count: accounts.count)
        for device in accounts.indices {
            friends[device] = try await Self.friends(of: device, in: graph, token: accounts[device].session.accessToken,
                                                     userID: { accounts[$0].userID }, preference: preference, app: app, http: http)
        }
        return friends
    }
}

extension Onboarding {
    /// One friendship: the inviter's side with its preference, then (unless pending) the invitee's.
    static func befriend(_ p: SocialGraph.Pair, inviter: Session, invitee: Session, preference: @Sendable (Int, Int) -> String,
                         app: any FriendApp, http: SupabaseHTTP) async throws {
        var request = FriendRequest(inviter: inviter, invitee: invitee, inviterPreference: preference(p.inviter, p.invitee),
                                    inviteePreference: preference(p.invitee, p.inviter), pending: p.pending)
        request.declined = p.declined
        try await app.befriend(request, via: http)
    }

    /// `device`'s friends with their published keys, read as the app reads them.
    static func friends(of device: Int, in graph: SocialGraph, token: String, userID: (Int) -> String,
                        preference: @Sendable (Int, Int) -> String, app: any FriendApp, http: SupabaseHTTP) async throws -> [Friend] {
        let pairs = graph.friendships(of: device)
        guard !pairs.isEmpty else { return [] }
        let others = pairs.map { $0.inviter == device ? $0.invitee : $0.inviter }
        let keys = try await app.friendKeys(of: others.map(userID), token: token, via: http)
        return try zip(pairs, others).compactMap { pair, other in
            let asInviter = pair.inviter == device
            let key = keys[userID(other)]
            // An app that shows keys to friends alone (QuickPic): a request left pending or declined has none;
            // one-directional links: a friend this device only hears needs none.
            if key == nil, pair.pending || pair.declined { return nil }
            if key == nil, app.sharing.sends(asInviter: asInviter) { throw SupabaseError.unexpected("no public key for device \(other)") }
            var friend = Friend(index: other, userID: userID(other), publicKey: key?.box, iShare: preference(device, other),
                                active: !pair.pending && !pair.declined, signingKey: key?.signing, deviceKey: key?.device)
            friend.share(app.sharing, asInviter: asInviter)
            return friend
        }
    }
}

extension SupabaseError {
    static func unexpected(_ message: String) -> SupabaseError { SupabaseError(kind: .unexpectedResponse, message: message) }
}
