import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyTime
import ConvoyWire
import Foundation
import Logging

/// Group apps (`Audience.group`, Survale): the social graph's teams formed
/// in set-up (provisioned, created, joined and started as the app does it),
/// each member's friends its teammates, and each team's owner ending it at
/// the end unless the scenario abandons it to the backend.
extension FleetRun {
    /// Forms every team of `graph` through the app, `concurrency` at a time; each device's friends are its teammates.
    func formGroups(_ graph: SocialGraph, accounts: [Int: DeviceAccount], app: any GroupApp) async throws -> [[Friend]] {
        let http = SupabaseHTTP(engine: engine, target: configuration.target)
        let serviceKey = configuration.target.serviceKey
        let roles = Self.groupRoles(graph, social: configuration.scenario.social, seed: configuration.scenario.seed)
        try await withThrowingTaskGroup(of: Void.self) { group in
            var started = 0
            for (k, members) in graph.groups.enumerated() {
                if started >= configuration.onboardingConcurrency { try await group.next() }
                started += 1
                let sessions = members.compactMap { accounts[$0]?.session }
                let later = Set(members.filter { roles[$0]?.joinsByRequest == true }.compactMap { accounts[$0]?.userID })
                group.addTask { try await app.formGroup(sessions, joiningLater: later, number: k, serviceKey: serviceKey, via: http) }
            }
            try await group.waitForAll()
        }
        var friends = [[Friend]](repeating: [], count: graph.devices)
        for members in graph.groups {
            for d in members {
                friends[d] = members.filter { $0 != d }.compactMap { m in
                    accounts[m].map { Friend(index: m, userID: $0.userID, publicKey: $0.keys.publicKey, iShare: "precise", active: true) }
                }
            }
        }
        return friends
    }

    /// Each device's place in its team: its first member owns it; the first `abandoned` teams are abandoned;
    /// a seeded `join_by_request` share of the other members ask to join during the run.
    static func groupRoles(_ graph: SocialGraph, social: Social, seed: UInt64) -> [GroupRole?] {
        var roles = [GroupRole?](repeating: nil, count: graph.devices)
        var rng = SeededGenerator(seed: seed, stream: 0x10B)
        for (k, members) in graph.groups.enumerated() {
            for (j, d) in members.enumerated() {
                let asks = j > 0 && social.joinByRequest > 0 && rng.uniform() < social.joinByRequest
                roles[d] = GroupRole(owner: j == 0, abandons: k < social.abandoned, joinsByRequest: asks, approveAfter: social.approveAfter)
                roles[d]?.ownerIndex = members.first
                if j == 0 { roles[d]?.replayEvery = social.replayEvery }
                // Its own stream: the draws above stay what they were for every seed.
                var leaving = SeededGenerator(seed: seed ^ UInt64(d), stream: 0x1EA7E)
                if j > 0, k >= social.abandoned, social.leaveRejoin > 0, leaving.uniform() < social.leaveRejoin {
                    roles[d]?.leavesAt = leaving.uniform(social.leaveAt.lowerBound, social.leaveAt.upperBound)
                    roles[d]?.rejoinAfter = leaving.uniform(social.rejoinAfter.lowerBound, social.rejoinAfter.upperBound)
                }
            }
            if let owner = members.first, members.contains(where: { roles[$0].map { $0.joinsByRequest || $0.leavesAt != nil } ?? false }) {
                roles[owner]?.hearsJoinRequests = true
            }
        }
        return roles
    }

    /// How the teams ended, read from the backend with the service key once the abandoned ones are due:
    /// each abandoned team between `auto_end` and `auto_end` + grace after its last member left, and no
    /// other team ended by the backend. Nil without a service key. `purged`: how groups ended as the
    /// retention check saw them, by group id (a group purged since has no row left to read).
    func groupsReport(_ graph: SocialGraph, devices: [VirtualDevice?], app: any GroupApp, ledgers: GroupLedgers,
                      purged: [String: GroupEnd] = [:]) async -> GroupsReport? {
        let (media, messages) = (closeMedia(ledgers.media), closeMessages(ledgers.messages))
        guard let serviceKey = configuration.target.serviceKey else {
            logger.notice("groups: no service key, so how the operations ended is not checked")
            return nil
        }
        let social = configuration.scenario.social
        // The embedded backend looks every auto-end ÷ 20 (at most 5 s), and hears of a closed connection late on a busy
        // machine: five more seconds unless the scenario says (`auto_end_grace`).
        var report = GroupsReport(groups: graph.groups.count, abandoned: min(social.abandoned, graph.groups.count),
                                  autoEndSeconds: social.autoEnd, graceSeconds: social.autoEndGrace ?? (min(5, social.autoEnd / 20) + 5))
        (report.media, report.messages) = (media, messages)
        if !ledgers.direct.isEmpty {
            var gaps: [Int: [DeviceLedger.Span]] = [:]
            for (i, d) in devices.enumerated() { if let d { gaps[i] = await d.ledger.gaps } }
            let direct = ledgers.direct.close { gaps[$0] ?? [] }
            metrics.count(.directLost, by: direct.lostTotal)
            report.direct = direct
        }
        if app.archiveEvery != nil { report.replay = await replayReport(graph, devices: devices, app: app, ledger: ledgers.replays, into: &report) }
        var lastLeft: [Int: Double] = [:]
        for k in 0..<report.abandoned {
            var last: Double?
            for d in graph.groups[k] { if let t = await devices[d]?.group.disconnectedAt { last = max(last ?? t, t) } }
            lastLeft[k] = last
        }
        if let due = lastLeft.values.max().map({ $0 + social.autoEnd + report.graceSeconds }), due > clock.wallNow() {
            let wait = min(due - clock.wallNow(), 1200)
            logger.notice("groups: waiting \(String(format: "%.0f", wait)) s for the backend to end the abandoned ones")
            try? await clock.monotonic.sleep(until: clock.now() + wait)
        }
        let ends: [String: GroupEnd]
        do {
            ends = try await app.groupEnds(serviceKey: serviceKey, via: SupabaseHTTP(engine: engine, target: configuration.target))
        } catch {
            logger.error("groups: cannot read how the operations ended: \(error)")
            return nil
        }
        for (k, members) in graph.groups.enumerated() {
            guard let owner = members.first, let ownerID = await devices[owner]?.account.userID else { continue }
            let end = ends[ownerID] ?? app.groupID(of: ownerID).flatMap { purged[$0] }
            report.add(group: k, abandoned: k < report.abandoned, ended: end?.ended ?? false, byBackend: end?.byBackend ?? false,
                       endedAt: end?.endedAt, lastLeft: lastLeft[k])
        }
        return report
    }

    /// Each group its owner ended, as the owner read it back right after: what came back against what its members stored.
    private func replayReport(_ graph: SocialGraph, devices: [VirtualDevice?], app: any GroupApp, ledger: ReplayLedger,
                              into report: inout GroupsReport) async -> ReplayReport {
        var out = ReplayReport()
        let entries = ledger.all
        for (k, members) in graph.groups.enumerated() {
            guard let owner = members.first, let ownerDevice = devices[owner], let groupID = await app.groupID(of: ownerDevice.account.userID),
                  let entry = entries[groupID] else {
                out.notTested += 1
                continue
            }
            var (positions, lines) = (0, 0)
            for d in members {
                guard let device = devices[d] else { continue }
                let stored = await device.group.contributed
                positions += stored[.archive] ?? 0
                // A photo's line counts under messages too (`.media` is its object in Storage).
                lines += stored[.messages] ?? 0
            }
            // Nothing stored: nothing to read back, nothing tested.
            guard positions + lines > 0 else {
                out.notTested += 1
                continue
            }
            out.groups += 1
            guard let load = entry.load else {
                out.failed += 1
                report.record(GroupsReport.Finding(group: k, kind: "replay_failed", detail: "its owner could not read it back after ending it"))
                continue
            }
            out.positionsExpected += positions
            out.messagesExpected += lines
            out.positionsReturned += load.positions
            out.messagesReturned += load.messages
            out.withHeading += load.withHeading
            // More than stored is a write whose answer was lost after it committed: all there all the same.
            if load.positions >= positions, load.messages >= lines {
                out.complete += 1
            } else {
                out.short += 1
                report.record(GroupsReport.Finding(group: k, kind: "replay_short",
                                                   detail: "\(load.positions) of \(positions) archived positions, \(load.messages) of \(lines) chat lines"))
            }
        }
        return out
    }
}
