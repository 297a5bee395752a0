import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation

/// Device migration (greenbox-prd.md §4.1): a new key pair, and friends who accept again.
extension VirtualDevice {
    /// Reinstalls the app (PRD §4.1): a new key pair, published on the
    /// `users` row, and a new invite for each active friend. Returns the
    /// codes, by friend, for them to accept again.
    func reinstall(at intended: Double) async -> [(friend: Int, code: String)] {
        if case .gone = life { return [] }
        guard let keys = try? BoxKeyPair() else {
            metrics.count("migration_failures")
            return []
        }
        var retired = account.previousKeys
        retired.append(account.keys)
        account = DeviceAccount(index: account.index, email: account.email, password: account.password, session: account.session,
                                keys: keys, previousKeys: retired)
        migratedAt = intended
        metrics.count("migration_reinstalls")
        // From now on what friends seal to the old key does not open, until each accepts again.
        let active = friends.filter(\.active)
        for friend in active { awaitingNewKey.insert(Int32(friend.index)) }
        let token = account.session.accessToken
        let row = "{\"id\":\"\(account.userID)\",\"public_key\":\"\(keys.publicKey.base64)\"}"
        do {
            try await rest.upsert("users", json: Array(row.utf8), onConflict: "id", token: token)
            metrics.count("http_requests")
        } catch {
            metrics.count("http_requests")
            metrics.count("migration_failures")
            _ = countFailure(error)
            return []
        }
        var codes: [(friend: Int, code: String)] = []
        for friend in active {
            do {
                let invite = try await rest.rpc("create_invite", ["preference": friend.iShare], token: token)
                metrics.count("http_requests")
                if let code = (invite as? [String: Any])?["code"] as? String { codes.append((friend.index, code)) }
            } catch {
                metrics.count("http_requests")
                metrics.count("migration_failures")
                _ = countFailure(error)
            }
        }
        return codes
    }

    /// Accepts a reinstalled friend's new invite and switches to their new key.
    func reaccept(code: String, from inviter: Int) async {
        if case .gone = life { return }
        guard let i = friends.firstIndex(where: { $0.index == inviter }) else { return }
        let friend = friends[i]
        do {
            _ = try await rest.rpc("accept_invite", ["code": code, "preference": friend.iShare], token: account.session.accessToken)
            let rows = try await rest.select("users", query: "select=public_key&id=eq.\(friend.userID)", token: account.session.accessToken)
            metrics.count("http_requests", by: 2)
            guard let text = rows.first?["public_key"] as? String, let key = try? PublicKey(base64: text) else {
                metrics.count("migration_failures")
                return
            }
            friends[i] = Friend(index: friend.index, userID: friend.userID, publicKey: key, iShare: friend.iShare, active: true)
            metrics.count("migration_reaccepted")
        } catch {
            metrics.count("http_requests")
            metrics.count("migration_failures")
            _ = countFailure(error)
        }
    }
}
