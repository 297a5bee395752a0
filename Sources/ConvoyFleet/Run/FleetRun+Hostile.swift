import ConvoyGeo
import ConvoyMetrics
import ConvoyTime
import ConvoyWire
import Foundation
import Logging

/// Hostile devices (the scenario's `hostile:`): a seeded share of the fleet
/// runs a probe catalogue during the load, against real devices of the same
/// fleet: an active friend, a friend of that friend who is not its own, and
/// a stranger. Their outcomes are summed per probe; any leak fails the run.
extension FleetRun {
    /// The hostile devices' casts: for each, who it probes (nil victims: the fleet has no friend of a friend for it).
    struct HostileCast: Sendable {
        var attacker: Int
        var friend: Int
        var victim: Int
        var stranger: Int
    }

    /// Picks the hostile devices and their victims from the social graph, deterministically from the seed
    /// (every shard picks the same).
    static func hostileCasts(_ hostile: Hostile, graph: SocialGraph, seed: UInt64) -> (casts: [HostileCast], unmatched: [Int]) {
        hostileCasts(hostile, links: (0..<graph.devices).map { d in
            graph.friendships(of: d).map { Link(index: $0.inviter == d ? $0.invitee : $0.inviter, active: !$0.pending) }
        }, seed: seed)
    }

    static func hostileCasts(_ hostile: Hostile, friends: [[Friend]], seed: UInt64) -> (casts: [HostileCast], unmatched: [Int]) {
        hostileCasts(hostile, links: friends.map { $0.map { Link(index: $0.index, active: $0.active) } }, seed: seed)
    }

    /// Other shards' devices a hostile device here probes, signed in at pairing; each session
    /// refreshed before a pass that would find it expired.
    actor RemoteSessions {
        var accounts: [Int: RemoteAccount]
        let onboarding: Onboarding

        init(_ accounts: [Int: RemoteAccount], onboarding: Onboarding) { (self.accounts, self.onboarding) = (accounts, onboarding) }

        func session(_ i: Int) async -> Session {
            guard let account = accounts[i] else { preconditionFailure("device \(i) of another shard was not signed in") }
            if let fresh = try? await onboarding.fresh(account) { accounts[i] = fresh }
            return accounts[i]!.session
        }
    }

    struct Link {
        var index: Int
        var active: Bool
    }

    /// `links[d]`: device d's friends in pairing order, each with whether the friendship is active.
    static func hostileCasts(_ hostile: Hostile, links friends: [[Link]], seed: UInt64) -> (casts: [HostileCast], unmatched: [Int]) {
        guard let (order, count, drawn) = attackers(hostile, devices: friends.count, seed: seed) else { return ([], []) }
        var rng = drawn
        var casts: [HostileCast] = [], unmatched: [Int] = []
        for a in order.prefix(count) {
            let mine = Set(friends[a].filter(\.active).map(\.index))
            var found: (Int, Int)?
            search: for f in friends[a].filter(\.active).map(\.index) {
                for v in friends[f].filter(\.active).map(\.index) where v != a && !mine.contains(v) {
                    found = (f, v)
                    break search
                }
            }
            guard let (f, v) = found else {
                unmatched.append(a)
                continue
            }
            let taken: Set<Int> = mine.union([a, f, v])
            let strangers = order.filter { !taken.contains($0) && !friends[$0].contains { $0.index == a } }
            guard !strangers.isEmpty else {
                unmatched.append(a)
                continue
            }
            casts.append(HostileCast(attacker: a, friend: f, victim: v, stranger: strangers[Int(rng.next() % UInt64(strangers.count))]))
        }
        return (casts, unmatched)
    }

    /// Couples (`FriendApp.friendsAreCouples`, Closer): the attacker is a member of a couple, the friend its
    /// partner, the victim a member of another couple, the stranger someone in no couple (or, when everyone is
    /// in one, in a third couple) — no one has a friend of a friend.
    static func coupleHostileCasts(_ hostile: Hostile, graph: SocialGraph, seed: UInt64) -> (casts: [HostileCast], unmatched: [Int]) {
        let n = graph.devices
        var partner = [Int?](repeating: nil, count: n)
        for p in graph.pairs where !p.pending {
            partner[p.inviter] = p.invitee
            partner[p.invitee] = p.inviter
        }
        let waiting = Set(graph.pairs.filter(\.pending).map(\.inviter))
        guard let (order, count, _) = attackers(hostile, devices: n, seed: seed) else { return ([], []) }
        var casts: [HostileCast] = [], unmatched: [Int] = []
        // The hostile phones are drawn among those in a couple: one alone has no partner to be its friend.
        for a in order.filter({ partner[$0] != nil }).prefix(count) {
            guard let f = partner[a], let v = order.first(where: { $0 != a && $0 != f && partner[$0] != nil }) else {
                unmatched.append(a)
                continue
            }
            let taken: Set<Int> = [a, f, v, partner[v]!]
            let strangers = order.filter { !taken.contains($0) }
            // Best someone whose own invite was left unanswered: it accepts nothing in the run, so the attempts the
            // probes spend in its name (the accept limit counts per caller) cost no pairing of the fleet's.
            guard let s = strangers.first(where: { waiting.contains($0) }) ?? strangers.first(where: { partner[$0] == nil }) ?? strangers.first else {
                unmatched.append(a)
                continue
            }
            casts.append(HostileCast(attacker: a, friend: f, victim: v, stranger: s))
        }
        return (casts, unmatched)
    }

    /// The devices in a seeded order, how many of the first are hostile, and the generator that drew the order
    /// (the same on every shard); nil when there are none or fewer than four devices.
    static func attackers(_ hostile: Hostile, devices n: Int, seed: UInt64) -> (order: [Int], count: Int, rng: SeededGenerator)? {
        guard hostile.share > 0, n >= 4 else { return nil }
        var rng = SeededGenerator(seed: seed, stream: 0x4057)
        var order = Array(0..<n)
        SocialGraph.shuffle(&order, &rng)
        return (order, min(n, max(1, Int((hostile.share * Double(n)).rounded()))), rng)
    }

    /// The scenario's probe catalogue, read before anything starts (bad input names file, line and key).
    public static func probeCatalogue(for configuration: Configuration) throws(ScenarioError) -> ProbeCatalogue? {
        guard let hostile = configuration.scenario.hostile else { return nil }
        let file = configuration.scenarioFile
        let path = hostile.catalogue.hasPrefix("/") ? hostile.catalogue
            : ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(hostile.catalogue)
        guard FileManager.default.fileExists(atPath: path) else {
            throw ScenarioError(file: file, line: hostile.catalogueLine, column: hostile.catalogueColumn, path: "hostile.catalogue",
                                message: "\(path): no such file")
        }
        return try ProbeCatalogueFile.load(path)
    }

    /// Runs each cast's catalogue at `start` (and every `hostile.every` after, until `end`); the task returns every outcome.
    /// `devices[i]` is nil for a device on another shard: it is probed as `remote[i]`, signed in at pairing.
    func scheduleProbes(_ hostile: Hostile, catalogue: ProbeCatalogue, casts: [HostileCast], devices: [VirtualDevice?],
                        remote: [Int: RemoteAccount], start: Double, end: Double, file: String) -> Task<ProbeSummary, Never> {
        let sessions = RemoteSessions(remote, onboarding: Onboarding(engine: engine, target: configuration.target, runID: configuration.runID,
                                                                  app: configuration.app))
        @Sendable func party(_ i: Int) async -> ProbeParty {
            if let d = devices[i] { return ProbeParty(await d.currentAccount) }
            return ProbeParty(session: await sessions.session(i))
        }
        // Two devices of other shards (a cast's friend and victim) are paired when the backend says one asked and the other accepted.
        let (app, http) = (configuration.app.friends, SupabaseHTTP(engine: engine, target: configuration.target))
        @Sendable func backendPaired(_ a: Int, _ b: Int) async -> Bool {
            guard let app else { return false }
            for (asker, other) in [(a, b), (b, a)] {
                let session = await sessions.session(asker), otherID = await sessions.session(other).userID
                let accepted = (try? await app.acceptedRequests(by: session.userID, token: session.accessToken, via: http)) ?? []
                if accepted.contains(where: { if case .accepted(_, let by) = $0 { by == otherID } else { false } }) { return true }
            }
            return false
        }
        let runner = ProbeRunner(target: configuration.target, engine: engine, replayMaxAge: configuration.device.staleAfter,
                                 logger: logger, app: configuration.app)
        // Friends who pair on the phones during the run (Green Box `pairing: prd`): a cast probes once its attacker and
        // friend, and its friend and victim, are friends on their phones; one that has not paired by the end of the
        // steady part tests nothing, and says so.
        let awaitsPairing = configuration.app.pairsDuringRun && !configuration.app.friendsAreCouples
        return Task { [clock, metrics, logger] in
            // Running totals per probe (a summary keeps sums and a little evidence, not every outcome of every pass).
            var collected = ProbeSummary(outcomes: [], catalogue: catalogue, file: file, hostileDevices: casts.count)
            // A first pass asked for after the steady part (e.g. `--duration` shortened it) runs as it ends.
            var next = min(start, end)
            while next <= end, !Task.isCancelled {
                do { try await clock.monotonic.sleep(until: next) } catch { return collected }
                let passStarted = clock.now()
                logger.info("hostile devices: \(casts.count) running \(catalogue.name)")
                await withTaskGroup(of: [ProbeOutcome].self) { group in
                    for cast in casts {
                        group.addTask {
                            // Probes that post to the victim judge what its phone hears: it listens first (a phone slow
                            // to subscribe on a loaded machine would hear nothing), for at most 30 s.
                            if let victim = devices[cast.victim] {
                                let until = clock.now() + 30
                                while await !victim.isListening, clock.now() < until {
                                    try? await clock.monotonic.sleep(until: clock.now() + 0.25)
                                }
                            }
                            if awaitsPairing, !(await Self.castPaired(cast, devices: devices, clock: clock, until: end, backendPaired: backendPaired)) {
                                return catalogue.probes.map { probe in
                                    var o = ProbeOutcome(id: probe.id, category: probe.category, description: probe.description, ifLeaked: probe.ifLeaked)
                                    (o.section, o.tried) = (probe.section, 1)
                                    o.notes = ["inconclusive: hostile device \(cast.attacker)'s cast had not paired on its phones by the end of the steady "
                                               + "part (attacker and friend \(cast.friend), friend and victim \(cast.victim)): nothing was tested"]
                                    return o
                                }
                            }
                            let attacker = await party(cast.attacker)
                            let victims = ProbeVictims(friend: await party(cast.friend), victim: await party(cast.victim),
                                                       stranger: await party(cast.stranger))
                            return await runner.run(catalogue, attacker: attacker, victims: victims)
                        }
                    }
                    for await outcomes in group {
                        for o in outcomes {
                            metrics.count(.probeTries, by: o.tried)
                            metrics.count(.probeLeaks, by: o.leaked)
                            metrics.count(.probeFindings, by: o.findings)
                        }
                        collected.add(outcomes, catalogue: catalogue)
                    }
                }
                guard hostile.every > 0 else { return collected }
                // A pass longer than `every` delays the next; passes never pile up behind the clock.
                next = max(passStarted + hostile.every, clock.now())
            }
            return collected
        }
    }

    /// Whether `cast`'s attacker and friend, and its friend and victim, are active friends on their phones (each end's
    /// here), waiting for it until `until` (run seconds). A phone on another shard cannot be asked: a pair with one end
    /// here is paired when that end's phone says so (it heard the friendship become active at the backend); a pair with
    /// both ends elsewhere, when the backend says one of them asked and the other accepted (`backendPaired`).
    static func castPaired(_ cast: HostileCast, devices: [VirtualDevice?], clock: RunClock, until: Double,
                           backendPaired: @Sendable (Int, Int) async -> Bool = { _, _ in false }) async -> Bool {
        func paired() async -> Bool {
            for (a, b) in [(cast.attacker, cast.friend), (cast.friend, cast.victim)] {
                switch (devices[a], devices[b]) {
                case let (da?, db?): guard await da.isActiveFriend(b), await db.isActiveFriend(a) else { return false }
                case let (da?, nil): guard await da.isActiveFriend(b) else { return false }
                case let (nil, db?): guard await db.isActiveFriend(a) else { return false }
                case (nil, nil): guard await backendPaired(a, b) else { return false }
                }
            }
            return true
        }
        while !(await paired()) {
            guard clock.now() < until, !Task.isCancelled else { return false }
            try? await clock.monotonic.sleep(until: clock.now() + 0.25)
        }
        return true
    }
}

extension VirtualDevice {
    /// Whether the phone has device `index` as an active friend (paired, on this phone's side).
    func isActiveFriend(_ index: Int) -> Bool { friends.contains { $0.index == index && $0.active } }
}
