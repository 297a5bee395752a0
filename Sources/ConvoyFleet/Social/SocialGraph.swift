import ConvoyGeo

/// Who is friends with whom, deterministic from the scenario's seed (so every
/// shard of a run derives the same graph). Devices are numbered 0..<n across
/// all groups; each belongs to one community (round-robin) and befriends only
/// its own community. Each device wants a number of friends drawn from
/// `social.friends`; in a seeded order, each draws partners at random among
/// those that still want more, so a device ends with at most what it wanted
/// (fewer when its community runs out of partners). O(devices × friends).
public struct SocialGraph: Sendable, Equatable {
    /// One friendship: `inviter` creates the invite, `invitee` accepts it.
    public struct Pair: Sendable, Hashable {
        public var inviter: Int
        public var invitee: Int
        /// Left at "decide later": the invite is never accepted, nothing is shared.
        public var pending: Bool
        /// Declined by the invitee (`social.decline`): nothing is shared.
        public var declined = false
    }

    public let devices: Int
    public let pairs: [Pair]
    public let community: [Int]
    /// With `social.groups`: the teams, each listing its members with its owner first; empty otherwise.
    public let groups: [[Int]]

    /// The device's friendships, as inviter or invitee.
    public func friendships(of device: Int) -> [Pair] { byDevice[device] }
    private let byDevice: [[Pair]]

    public init(devices n: Int, social: Social, seed: UInt64) {
        precondition(n >= 0)
        devices = n
        if let size = social.groups {
            let (teamPairs, teams) = Self.teams(n, size: size, seed: seed)
            var teamOf = Array(repeating: 0, count: n)
            for (t, members) in teams.enumerated() { for d in members { teamOf[d] = t } }
            (pairs, groups, community) = (teamPairs, teams, teamOf)
            var byDevice = Array(repeating: [Pair](), count: n)
            for p in teamPairs {
                byDevice[p.inviter].append(p)
                byDevice[p.invitee].append(p)
            }
            self.byDevice = byDevice
            return
        }
        groups = []
        let communities = max(1, min(social.communities, max(n, 1)))
        community = (0..<n).map { $0 % communities }
        var rng = SeededGenerator(seed: seed, stream: 0x50C1A1)
        var wanted = (0..<n).map { _ in
            social.friends.lowerBound + Int(rng.next() % UInt64(max(1, social.friends.upperBound - social.friends.lowerBound + 1)))
        }
        var pairs: [Pair] = []
        var linked = Set<UInt64>()
        for c in 0..<communities {
            var members = Array(stride(from: c, to: n, by: communities))
            Self.shuffle(&members, &rng)
            // Those who still want friends; a member leaves when it has enough.
            var open = members.filter { wanted[$0] > 0 }
            var position = Dictionary(uniqueKeysWithValues: open.enumerated().map { ($1, $0) })
            func close(_ d: Int) {
                guard let i = position.removeValue(forKey: d) else { return }
                let last = open.removeLast()
                if last != d {
                    open[i] = last
                    position[last] = i
                }
            }
            // Each member, in the seeded order, draws partners among the open ones.
            for a in members where wanted[a] > 0 {
                var misses = 0
                while wanted[a] > 0, open.count > 1, misses < 32 {
                    let b = open[Int(rng.next() % UInt64(open.count))]
                    guard b != a, linked.insert(UInt64(min(a, b)) << 32 | UInt64(max(a, b))).inserted else {
                        misses += 1
                        continue
                    }
                    wanted[a] -= 1
                    wanted[b] -= 1
                    if wanted[b] == 0 { close(b) }
                    let aInvites = rng.next() & 1 == 0
                    var pair = Pair(inviter: aInvites ? a : b, invitee: aInvites ? b : a, pending: rng.chance(social.decideLater))
                    // Drawn only when asked for, so graphs without declines stay as they were.
                    if social.decline > 0, !pair.pending { pair.declined = rng.chance(social.decline) }
                    pairs.append(pair)
                }
                close(a)
            }
        }
        self.pairs = pairs
        var byDevice = Array(repeating: [Pair](), count: n)
        for p in pairs {
            byDevice[p.inviter].append(p)
            byDevice[p.invitee].append(p)
        }
        self.byDevice = byDevice
    }

    /// Devices in a seeded order cut into teams of a seeded size within `size` (the last team takes the
    /// remainder, or joins the one before when it would be smaller than the smallest size); in each, the
    /// first member (the owner) invites every other member, and every two members are friends.
    static func teams(_ n: Int, size: ClosedRange<Int>, seed: UInt64) -> (pairs: [Pair], groups: [[Int]]) {
        var rng = SeededGenerator(seed: seed, stream: 0x7EA45)
        var order = Array(0..<n)
        shuffle(&order, &rng)
        var groups: [[Int]] = []
        var at = 0
        while at < n {
            let want = size.lowerBound + Int(rng.next() % UInt64(size.upperBound - size.lowerBound + 1))
            let take = n - at - want < size.lowerBound ? n - at : want
            groups.append(Array(order[at..<min(n, at + take)]))
            at += take
        }
        var pairs: [Pair] = []
        for g in groups {
            for (i, a) in g.enumerated() {
                for b in g[(i + 1)...] { pairs.append(Pair(inviter: a, invitee: b, pending: false)) }
            }
        }
        return (pairs, groups)
    }

    /// Fisher–Yates with Convoy's own generator (the same order on every platform).
    static func shuffle(_ a: inout [Int], _ rng: inout SeededGenerator) {
        guard a.count > 1 else { return }
        for i in stride(from: a.count - 1, to: 0, by: -1) {
            a.swapAt(i, Int(rng.next() % UInt64(i + 1)))
        }
    }

    public static func == (l: SocialGraph, r: SocialGraph) -> Bool {
        l.devices == r.devices && l.pairs == r.pairs && l.community == r.community && l.groups == r.groups
    }
}
