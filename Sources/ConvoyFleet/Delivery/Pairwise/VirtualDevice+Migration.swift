import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation

/// Device migration (greenbox-prd.md §4.1): a new key pair, and friends who accept again.
extension VirtualDevice {
    /// Reinstalls the app (PRD §4.1): a new key pair, published as the app
    /// publishes keys, and a new invitation for each active friend. Returns the
    /// codes, by friend, for them to accept again.
    func reinstall(at intended: Double) async -> [(friend: Int, code: String)] {
        if life.isGone { return [] }
        guard let keys = try? BoxKeyPair() else {
            metrics.count(.migrationFailures)
            return []
        }
        var retired = account.previousKeys
        retired.append(account.keys)
        account = DeviceAccount(index: account.index, email: account.email, password: account.password, session: account.session,
                                keys: keys, previousKeys: retired)
        pairwise.migratedAt = intended
        metrics.count(.migrationReinstalls)
        // From now on what friends seal to the old key does not open, until each accepts again.
        let active = friends.filter(\.active)
        for friend in active { pairwise.awaitingNewKey.insert(Int32(friend.index)) }
        let token = account.session.accessToken
        do {
            try await pairwiseApp.publishKey(keys.publicKey, session: account.session, via: http)
            metrics.count(.httpRequests)
        } catch {
            metrics.count(.httpRequests)
            metrics.count(.migrationFailures)
            _ = countFailure(error)
            return []
        }
        var codes: [(friend: Int, code: String)] = []
        for friend in active {
            // An app that pairs during the run asks each friend again as it asks (each accepts when it hears it).
            do {
                if try await pairwiseApp.requestAgain(Invitee(userID: friend.userID, email: ""), from: account.session, via: http) {
                    metrics.count(.httpRequests, by: 2)
                    continue
                }
            } catch {
                metrics.count(.httpRequests)
                metrics.count(.migrationFailures)
                _ = countFailure(error, operation: "migration_request")
                continue
            }
            do {
                codes.append((friend.index, try await pairwiseApp.invite(preference: friend.iShare, token: token, via: http)))
                metrics.count(.httpRequests)
            } catch {
                metrics.count(.httpRequests)
                metrics.count(.migrationFailures)
                _ = countFailure(error)
            }
        }
        return codes
    }

    /// A friend reinstalled and asked again (an app that pairs during the run): accepted after the migration's
    /// `reaccept` delay, then its new key read and sealed to from then on.
    func reacceptRequest(_ id: String, from userID: String) async {
        guard life.isReceiving, let i = friends.firstIndex(where: { $0.userID == userID }) else { return }
        let friend = friends[i]
        do {
            let token = account.session.accessToken
            try await friendApp.acceptFriendship(id, preference: friend.iShare, token: token, via: http)
            let keys = try await pairwiseApp.publicKeys(of: [userID], token: token, via: http)
            metrics.count(.httpRequests, by: 2)
            guard let key = keys[userID] else {
                metrics.count(.migrationFailures)
                return
            }
            friends[i] = friend.with(publicKey: key)
            metrics.count(.migrationReaccepted)
        } catch {
            metrics.count(.httpRequests)
            metrics.count(.migrationFailures)
            _ = countFailure(error, operation: "migration_reaccept")
        }
    }

    /// Accepts a reinstalled friend's new invite and switches to their new key.
    func reaccept(code: String, from inviter: Int) async {
        if life.isGone { return }
        guard let i = friends.firstIndex(where: { $0.index == inviter }) else { return }
        let friend = friends[i]
        do {
            let token = account.session.accessToken
            try await pairwiseApp.accept(code: code, preference: friend.iShare, token: token, via: http)
            let keys = try await pairwiseApp.publicKeys(of: [friend.userID], token: token, via: http)
            metrics.count(.httpRequests, by: 2)
            guard let key = keys[friend.userID] else {
                metrics.count(.migrationFailures)
                return
            }
            friends[i] = Friend(index: friend.index, userID: friend.userID, publicKey: key, iShare: friend.iShare, active: true)
            metrics.count(.migrationReaccepted)
        } catch {
            metrics.count(.httpRequests)
            metrics.count(.migrationFailures)
            _ = countFailure(error)
        }
    }
}
