import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoyWire

/// Where the phone hands over to its app's shape: the one place outside a room's own code that asks
/// which shape the phone has (`shape`, its `ShapeState`). The phone calls these; each shape's room does the rest.
extension VirtualDevice {
    /// Online: how it starts receiving. A mailbox phone polls (no Realtime); a group member not let in
    /// yet asks, and connects once its owner has let it in; the rest connect to Realtime.
    func startReceiving(at intended: Double) async {
        switch shape {
        case .mailbox: openMailbox(at: intended)
        case .group(let g) where g.role?.joinsByRequest == true: await askToJoin()
        case .group, .pairwise, .modifying: connect(at: intended)
        }
    }

    /// The Realtime channels it joins: a pairwise phone, its own rows' subscription; a group phone, its group's channels
    /// and the pair channels it has opened; a mailbox phone, none.
    var channels: [AppSubscription] {
        switch shape {
        case .pairwise: [pairwiseApp.subscription(for: account.userID)]
        case .group: groupChannels
        case .mailbox, .modifying: []
        }
    }

    /// One tick's measured position, delivered: to the whole group at once, or sealed to each friend.
    func deliver(_ measured: Measured, intended: Double) async {
        switch shape.kind {
        case .group: await shareWithGroup(measured, intended: intended)
        case .pairwise: await shareWithEachFriend(measured, intended: intended)
        case .mailbox: break  // a mailbox app shares no positions (its scenario is refused any that would)
        }
    }

    /// A request from `from`, who is already an active friend: a pairwise friend that reinstalled (PRD §4.1) and asks
    /// again, accepted again after the migration's delay (true: answered here). Other shapes' friends never ask twice.
    func shapeAsksAgain(_ id: String, from: String) -> Bool {
        guard case .pairwise = shape, friends.contains(where: { $0.userID == from && $0.active }) else { return false }
        let delay = rng.uniform(context.options.reacceptAfter.lowerBound, context.options.reacceptAfter.upperBound)
        context.scheduler.at(context.clock.now() + delay) { [weak self] _ in await self?.reacceptRequest(id, from: from) }
        return true
    }

    /// Connected: the shape's own timers (a group's archive of its members' positions, its owner's replays, direct
    /// messages, chat and media).
    func scheduleShapeTimers(from intended: Double) {
        if case .group = shape { scheduleGroupTimers(from: intended) }
    }

    /// A channel subscribed (first or again): a group tracks its presence there, hears the join requests it decides,
    /// and loads the chat it missed; a member back in its group is on its channels again.
    func shapeSubscribed(_ topic: String) {
        if case .group = shape { groupSubscribed(topic) }
    }

    /// The first subscription: true when the shape timed the wait itself (a member let in by request: `join_channel`),
    /// so that it is not the phone's `subscribe` figure.
    func shapeTimedFirstSubscription() -> Bool {
        if case .group = shape { joinedByRequest() } else { false }
    }

    /// Its connection or a channel (`topic`; nil: every channel) went down at `wall`: a group owes itself the chat since.
    func shapeLost(at wall: Double, topic: String? = nil) {
        if case .group = shape { chatLost(at: wall, topic: topic) }
    }

    /// The run ends for it (before it leaves): a group's owner ends its group, unless it abandons it to the backend.
    public func shapeEnds() async {
        if case .group = shape { await leaveGroup() }
    }

    /// Its timeline's step away (`PhoneTimeline.awayAt`): a group member leaves its group for a while, to ask again.
    public func shapeStepsAway() async {
        if case .group = shape { await leaveForAWhile() }
    }

    /// It stops sharing: a group's chat waiting to be tried again is given up.
    func shapeLeft() {
        if case .group = shape { closeChatQueue(groupLeaveReason) }
    }

    /// It closes for good (`gone`: it had already): a group notes when it left its channels and what chat it is owed
    /// then; what is still in the outbox stays unsent.
    func shapeDisconnecting(gone: Bool, subscribed: Bool) {
        switch shape {
        case .group: if !gone { groupDisconnecting(subscribed: subscribed) }
        case .pairwise: abandonQueue()
        case .mailbox: closeListener()
        case .modifying: break
        }
    }

    /// Whether the shape has nothing queued or owed: rows to post again or to catch up on, a group's chat owed or its
    /// end still being tried, a mailbox's messages owed to this phone.
    var shapeSettled: Bool {
        switch shape {
        case .pairwise(let s): s.isSettled
        case .group(let s): s.isSettled
        case .mailbox: profile.pollEvery == nil || context.mailbox.owed(to: index) == 0
        case .modifying: false
        }
    }

    /// A row that would not open: true the first time (`rowID` nil: no row, always), false for the same row again (it
    /// came twice: live, then in a backfill).
    func firstFailure(ofRow rowID: Int64?) -> Bool {
        guard let rowID, case .pairwise = shape else { return true }
        return pairwise.undecryptableRows.insert(rowID).inserted
    }

    /// An update from `sender` that would not open while this phone waits for that friend to read its new key.
    func undecryptableAfterMigration(from sender: Int32) {
        if case .pairwise(let s) = shape, s.awaitingNewKey.contains(sender) { metrics.count(.migrationUndecryptable) }
    }

    /// An update from `sender` opened: if this phone was waiting for it after a migration, how long that took.
    func restoredAfterMigration(from sender: Int32) {
        guard case .pairwise = shape else { return }
        if pairwise.awaitingNewKey.remove(sender) != nil, let migratedAt = pairwise.migratedAt {
            metrics.record(.migrationRestore, seconds: context.clock.now() - migratedAt)
        }
    }

    /// It is off its channels (it left, lost its connection, or a channel closed): a group counts it
    /// out of the presence its teammates should see.
    func offChannels() {
        if case .group = shape { context.convergence.subscribed(index, false) }
    }

    /// A new Realtime connection: a group phone has opened no pair channel on it yet.
    func resetShapeChannels() {
        if case .group = shape { resetDirect() }
    }

    /// A Realtime event about a channel of the shape's own (a group's pair channels for direct messages), which the
    /// shape handles whole: true when it did, and the phone's lifecycle must not read it as about its subscription.
    func shapeHandled(_ event: RealtimeClient.Event) -> Bool {
        if case .group = shape { directChannelEvent(event) } else { false }
    }

    /// A join of the group's own channel refused with `reason`: true when the shape takes it as the end of the
    /// phone's part (a group's private channel that no longer lets the member in: its group ended, or it was taken
    /// out, while it was away; it stops, as the app does, rather than knocking for ever).
    func joinRefusalEnds(_ reason: String) -> Bool {
        guard case .group = shape, reason.hasPrefix("Unauthorized") else { return false }
        groupEnded()
        return true
    }

    /// Back after a gap (`since`, Unix seconds): a pairwise phone fetches the rows Realtime could not deliver meanwhile
    /// (a group's broadcasts are gone; its chat is loaded when its channel is back, `shapeSubscribed`).
    func shapeCatchUp(since: Double) async {
        if case .pairwise = shape { await backfill(since: since) }
    }

    /// A row received (its id and when the backend stored it): a pairwise phone keeps the last few for the retention check.
    func shapeReceivedRow(_ id: Int64, createdAt: Double) {
        if case .pairwise = shape { remember(row: id, createdAt: createdAt) }
    }

    /// A change on its subscription that is about its group (it ended, a message, a join request to decide).
    func shapeHeard(_ incoming: Incoming, at receivedAt: Double) {
        guard case .group = shape else { return metrics.count(.realtimeOtherChanges) }
        switch incoming {
        case .groupEnded: groupEnded()
        case .groupMessage(let sender, let message): receiveMessage(message, from: sender, at: receivedAt)
        case .joinRequest(let id): heardJoinRequest(id)
        default: metrics.count(.realtimeOtherChanges)
        }
    }

    /// A broadcast, a presence change or a push's reply: a group's (no other shape joins a channel that has them).
    func shapeEvent(_ event: RealtimeClient.Event) {
        if case .group = shape { handleGroup(event) }
    }

    /// A friend's update shown: a group draws it on its team map too.
    func showOnShapeMap(_ sender: Int32, _ update: LocationPayload) {
        if case .group = shape { group.teamMap.add(sender, lat: update.lat, lon: update.lon, ts: update.ts) }
    }
}
