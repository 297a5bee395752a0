import ConvoyGeo

/// Hostile devices of an app that shares with a team at once (Survale): the cast is drawn from
/// the run's teams, not from friends of friends. The attacker is a member (not the owner) of its
/// team; the friend is that team's owner (its case agent); the victim owns another team; the
/// stranger is in a third team (in neither: fewer than three teams leave the device unmatched).
extension FleetRun {
    /// `groups[k]`: team k's devices, its owner first (as `formGroups` made them). Deterministic from the seed.
    static func groupHostileCasts(_ hostile: Hostile, groups: [[Int]], seed: UInt64) -> (casts: [HostileCast], unmatched: [Int]) {
        let candidates = groups.flatMap { $0.dropFirst() }
        guard hostile.share > 0, !candidates.isEmpty else { return ([], []) }
        let n = groups.reduce(0) { $0 + $1.count }
        var rng = SeededGenerator(seed: seed, stream: 0x4058)
        var order = candidates
        SocialGraph.shuffle(&order, &rng)
        let count = min(order.count, max(1, Int((hostile.share * Double(n)).rounded())))
        var casts: [HostileCast] = [], unmatched: [Int] = []
        for a in order.prefix(count) {
            guard let mine = groups.firstIndex(where: { $0.contains(a) }) else { continue }
            let others = groups.indices.filter { $0 != mine && !groups[$0].isEmpty }
            guard !others.isEmpty else {
                unmatched.append(a)
                continue
            }
            let theirs = others[Int(rng.next() % UInt64(others.count))]
            let victim = groups[theirs][0]
            let thirds = others.filter { $0 != theirs }
            let pool = thirds.flatMap { groups[$0] }
            guard !pool.isEmpty else {
                unmatched.append(a)
                continue
            }
            casts.append(HostileCast(attacker: a, friend: groups[mine][0], victim: victim, stranger: pool[Int(rng.next() % UInt64(pool.count))]))
        }
        return (casts, unmatched)
    }
}
