import ConvoyMetrics
import ConvoyWire

/// Pairwise apps' friend keys (greenbox-prd.md §4.4 step a): read before sealing, once, at every send, or when the
/// cached ones are older than `key_cache_ttl` (`key_lookup`).
extension VirtualDevice {
    /// Whether this tick reads its friends' keys first (`key_lookup`).
    func keysDue(at now: Double) -> Bool {
        switch profile.keyLookup {
        case .once: false
        case .everySend: true
        case .cached: pairwise.keysReadAt.map { now - $0 >= profile.keyCacheTTL } ?? true
        }
    }

    /// Reads the active friends' keys from the backend, as the app does before sealing (PRD §4.4 step a);
    /// a friend who published a new key is sealed to with it from now on.
    func readFriendKeys() async {
        let ids = friends.filter(\.sharedWith).map(\.userID)
        let started = context.clock.now()
        do {
            let keys = try await pairwiseApp.publicKeys(of: ids, token: account.session.accessToken, via: http)
            metrics.record(.keyLookup, seconds: context.clock.now() - started)
            metrics.count(.keyLookups)
            spendHTTP(body: 0, response: 120 * keys.count, since: started)
            for i in friends.indices {
                guard let key = keys[friends[i].userID], key != friends[i].publicKey else { continue }
                friends[i] = friends[i].with(publicKey: key)
                metrics.count(.keyChangesSeen)
            }
            pairwise.keysReadAt = context.clock.now()
        } catch {
            metrics.count(.keyLookupFailures)
            _ = countFailure(error)
        }
        metrics.count(.httpRequests)
    }
}
