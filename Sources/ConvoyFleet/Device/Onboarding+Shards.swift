import ConvoySodium
import ConvoyWire
import Foundation

/// A device on another shard, as this shard knows it: signed in with its
/// derived password (docs/distributed.md), for its user id and, where this
/// shard owns the pair, to accept the invite on its behalf.
public struct RemoteAccount: Sendable {
    public let index: Int
    public var session: Session
    public var userID: String { session.userID }
}

/// Pairing when the fleet is split over shards. Each shard signs up its own
/// devices; the shard of a pair's inviter creates the invite with the
/// inviter's token and accepts it with the invitee's (its own device, or one
/// signed in from another shard); then every shard waits until its devices'
/// friendships are all active, whoever made them, and reads their keys.
extension Onboarding {
    /// Signs in as device `index`, waiting (until `deadline`, Unix seconds) for its shard to have signed it up
    /// and published its key (friendships refer to the `users` row).
    public func signIn(_ index: Int, password: String, deadline: Double) async throws -> RemoteAccount {
        let http = SupabaseHTTP(engine: engine, target: target)
        let app = app
        var account: RemoteAccount?
        var wait = 0.25
        // Untyped throws here: the typed-throws form of this loop crashes the Swift 6.3 optimiser (SIL ownership).
        let email = email(index)
        func attempt() async throws(any Error) -> RemoteAccount? {
            if account == nil { account = RemoteAccount(index: index, session: try await app.signIn(email: email, password: password, via: http)) }
            return try await app.hasPublishedKey(account!.userID, token: account!.session.accessToken, via: http) ? account : nil
        }
        while true {
            var failure: any Error = SupabaseError.unexpected("device \(index) (\(email)) signed up but has not published its key")
            do {
                if let ready = try await attempt() { return ready }
            } catch {
                failure = error
            }
            // 400: not signed up yet on its shard; 429 and 5xx: the backend is busy.
            let status = (failure as? SupabaseError)?.status
            let retry = status.map { $0 == 400 || $0 == 429 || $0 >= 500 } ?? true
            guard retry, Date().timeIntervalSince1970 < deadline else {
                if status == 429 {
                    // Not a missing shard: the server refused the sign-in, and says nothing about whether it was signed up.
                    throw SupabaseError(kind: (failure as! SupabaseError).kind,
                                        message: "cannot sign in as device \(index) (\(email)) of another shard: \(failure): \(SetUpFailure.rateLimitHint)")
                }
                throw SupabaseError.unexpected("cannot sign in as device \(index) (\(email)) of another shard by the start: \(failure) "
                                               + "(is its shard running, with the same --run-id, --seed and CONVOY_SHARD_SECRET?)")
            }
            try await Task.sleep(for: .seconds(wait))
            wait = min(wait * 2, 2)
        }
    }

    /// A remote account's session, refreshed when it is (nearly) expired.
    public func fresh(_ account: RemoteAccount, margin: Double = 60) async throws -> RemoteAccount {
        guard account.session.expiresAt - margin <= Date().timeIntervalSince1970 else { return account }
        var refreshed = account
        refreshed.session = try await app.refresh(account.session, via: SupabaseHTTP(engine: engine, target: target))
        return refreshed
    }

    /// Signs in every other shard's device that one of `accounts` is paired with in `graph` (its user id is what a request,
    /// an answer and a friendship row name), waiting for each until `deadline` as `signIn` does.
    public func signInFriends(_ graph: SocialGraph, shard: Shard, local accounts: [Int: DeviceAccount], runID: String, deadline: Double,
                              concurrency: Int = 32) async throws -> [Int: RemoteAccount] {
        var needed = Set<Int>()
        for device in accounts.keys {
            for p in graph.friendships(of: device) {
                let other = p.inviter == device ? p.invitee : p.inviter
                if !shard.owns(other) { needed.insert(other) }
            }
        }
        var remote: [Int: RemoteAccount] = [:]
        try await forEach(Array(needed).sorted(), concurrency: concurrency) { i in
            try await self.signIn(i, password: shard.password(runID: runID, device: i), deadline: deadline)
        } collect: { remote[$0.index] = $0 }
        return remote
    }

    /// Creates the friendships this shard owns and returns its devices' friends (others' entries stay empty),
    /// with the remote accounts it signed in (for probes that need another shard's device).
    public func pair(_ graph: SocialGraph, shard: Shard, local accounts: [Int: DeviceAccount], runID: String, deadline: Double,
                     preference: @escaping @Sendable (Int, Int) -> String,
                     concurrency: Int = 32) async throws -> (friends: [[Friend]], remote: [Int: RemoteAccount]) {
        let http = SupabaseHTTP(engine: engine, target: target)
        let app = friendApp
        let remote = try await signInFriends(graph, shard: shard, local: accounts, runID: runID, deadline: deadline, concurrency: concurrency)
        let signedIn = remote
        @Sendable func session(_ i: Int) -> Session { accounts[i]?.session ?? signedIn[i]!.session }
        @Sendable func userID(_ i: Int) -> String { accounts[i]?.userID ?? signedIn[i]!.userID }

        let owned = graph.pairs.filter { shard.owns($0.inviter) }
        try await forEach(owned, concurrency: concurrency) { p in
            try await Self.befriend(p, inviter: session(p.inviter), invitee: session(p.invitee), preference: preference, app: app, http: http)
        } collect: { _ in }

        // The friendships other shards own: wait until each of our devices sees all of its active ones.
        var friends: [[Friend]] = Array(repeating: [], count: graph.devices)
        let local = accounts.keys.sorted()
        try await forEach(local, concurrency: concurrency) { device -> (Int, [Friend]) in
            let me = accounts[device]!
            let pairs = graph.friendships(of: device)
            guard !pairs.isEmpty else { return (device, []) }
            let active = pairs.filter { !$0.pending }.count
            while true {
                let count = try await app.activeFriendships(token: me.session.accessToken, via: http)
                if count >= active { break }
                guard Date().timeIntervalSince1970 < deadline else {
                    throw SupabaseError.unexpected("device \(device): \(count) of its \(active) friendships active by the start time; did every shard run?")
                }
                try await Task.sleep(for: .milliseconds(500))
            }
            return (device, try await Self.friends(of: device, in: graph, token: me.session.accessToken, userID: userID,
                                                   preference: preference, app: app, http: http))
        } collect: { friends[$0.0] = $0.1 }
        return (friends, remote)
    }

    /// Runs `work` over `items`, `concurrency` at a time, handing each result to `collect` in this task.
    private func forEach<T: Sendable, R: Sendable>(_ items: [T], concurrency: Int, _ work: @escaping @Sendable (T) async throws -> R,
                                                   collect: (R) -> Void) async throws {
        try await withThrowingTaskGroup(of: R.self) { group in
            var next = 0
            while next < min(items.count, concurrency) {
                let item = items[next]
                group.addTask { try await work(item) }
                next += 1
            }
            while let r = try await group.next() {
                collect(r)
                if next < items.count {
                    let item = items[next]
                    group.addTask { try await work(item) }
                    next += 1
                }
            }
        }
    }
}
