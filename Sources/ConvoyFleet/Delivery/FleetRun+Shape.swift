import ConvoyMetrics

/// Where the run hands over to its app's shape: set-up (a group app's teams are formed, its members
/// given roles), the hostile cast (chosen in a team, a couple or among friends), the retention clock,
/// the results each shape reports, and what a sharded run cannot do.
extension FleetRun {
    /// A group app's friends: the teams, formed as the app forms them (Survale: provisioned, created,
    /// joined, started). Nil for the other shapes, whose friends pair otherwise.
    func shapeFriends(_ graph: SocialGraph, accounts: [Int: DeviceAccount], app: any AppProfile) async throws -> [[Friend]]? {
        guard case .group(let app) = app.shaped else { return nil }
        return try await formGroups(graph, accounts: accounts, app: app)
    }

    /// Each phone's place in its group (nil for every phone of another shape).
    static func shapeRoles(_ app: any AppProfile, graph: SocialGraph, social: Social, seed: UInt64, count n: Int) -> [GroupRole?] {
        app.shape == .group ? groupRoles(graph, social: social, seed: seed) : Array(repeating: nil, count: n)
    }

    /// What each phone's role decides of its timeline: an owner who abandons its group, a member who leaves it for a while.
    static func shapeTimelines(_ roles: [GroupRole?]) -> [PhoneTimeline] {
        roles.map { PhoneTimeline(abandons: $0?.abandons == true, awayAt: $0?.leavesAt) }
    }

    /// A group app's retention counts from each group's end (Survale: operations purged after they end).
    static func retentionAfterGroupEnd(_ app: any AppProfile) -> Bool { app.shape == .group }

    /// Whether an update missed while its recipient's connection was down is gone for good (a group's broadcast:
    /// nothing stores it), rather than one a backfill should have brought (`Accounting.reconcile`'s `gapsLose`).
    static func missedInAGapIsGone(_ app: any AppProfile) -> Bool { app.shape == .group }

    /// The hostile devices and their victims: in one team, in a couple, or among friends.
    static func shapeHostileCasts(_ app: any AppProfile, _ hostile: Hostile, graph: SocialGraph, seed: UInt64)
        -> (casts: [HostileCast], unmatched: [Int]) {
        if app.shape == .group { return groupHostileCasts(hostile, groups: graph.groups, seed: seed) }
        if app.friendsAreCouples { return coupleHostileCasts(hostile, graph: graph, seed: seed) }
        return hostileCasts(hostile, graph: graph, seed: seed)
    }

    /// What the shape reports at the end: a group app's groups (ends, messages, media), a mailbox app's
    /// accounting of messages (for couples, their answers to the daily question, when they answered any).
    func shapeReports(_ graph: SocialGraph, devices: [VirtualDevice?], purged: [String: GroupEnd],
                      context: FleetContext, purgeLimit: Double) async -> (groups: GroupsReport?, mailbox: MailboxReport?) {
        switch context.shaped {
        case .group(let app, let ledgers): return (await groupsReport(graph, devices: devices, app: app, ledgers: ledgers, purged: purged), nil)
        case .mailbox(let app, let ledger):
            var report = closeMailbox(ledger, purgeLimit: purgeLimit)
            report.acknowledgeDeletes = !app.holdsUntilAnswered
            report.notifications = closeNotifications(app, at: context.clock.wallNow())
            return (nil, app.friendsAreCouples && report.sent == 0 ? nil : report)
        case .pairwise: return (nil, nil)
        }
    }

    /// Every phone has settled (the drain is over): a group's presence convergence stops waiting for phones still unseen.
    static func shapeDrained(_ context: FleetContext) {
        if case .group(_, let ledgers) = context.shaped { ledgers.convergence.finish() }
    }

    /// Why the app's shape cannot run on shards, if it cannot.
    static func shapeRefusesShards(_ app: any AppProfile) -> String? {
        switch app.shape {
        case .group: "\(app.name)'s teams are formed in one process (its set-up knows every member): drop --shard"
        case .mailbox: "\(app.name)'s messages are accounted in one process (the sender's record and the recipient's): drop --shard"
        case .pairwise: nil
        }
    }
}
