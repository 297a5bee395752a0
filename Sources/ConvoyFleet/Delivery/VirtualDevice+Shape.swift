import ConvoyCrypto
import ConvoyMetrics
import ConvoyWire

/// Where the phone hands over to its app's shape: the one place outside a room's own code that asks
/// which shape the app has. The phone calls these; each shape's room does the rest.
extension VirtualDevice {
    /// Online: how it starts receiving. A mailbox phone polls (no Realtime); a group member not let in
    /// yet asks, and connects once its owner has let it in; the rest connect to Realtime.
    func startReceiving(at intended: Double) async {
        switch app.shape {
        case .mailbox: openMailbox(at: intended)
        case .group where group.role?.joinsByRequest == true: await askToJoin()
        case .group, .pairwise: connect(at: intended)
        }
    }

    /// One tick's measured position, delivered: to the whole group at once, or sealed to each friend.
    func deliver(_ measured: Measured, intended: Double) async {
        switch app.shape {
        case .group: await shareWithGroup(measured, intended: intended)
        case .pairwise, .mailbox: await shareWithEachFriend(measured, intended: intended)
        }
    }

    /// Connected: the shape's own timers (a group's archive of its members' positions, its owner's replays, direct
    /// messages, chat and media).
    func scheduleShapeTimers(from intended: Double) {
        if app.shape == .group { scheduleGroupTimers(from: intended) }
    }

    /// A channel subscribed (first or again): a group tracks its presence there, hears the join requests it decides,
    /// and loads the chat it missed; a member back in its group is on its channels again.
    func shapeSubscribed(_ topic: String) {
        if app.shape == .group { groupSubscribed(topic) }
    }

    /// The first subscription: true when the shape timed the wait itself (a member let in by request: `join_channel`),
    /// so that it is not the phone's `subscribe` figure.
    func shapeTimedFirstSubscription() -> Bool {
        app.shape == .group && joinedByRequest()
    }

    /// Its connection or a channel (`topic`; nil: every channel) went down at `wall`: a group owes itself the chat since.
    func shapeLost(at wall: Double, topic: String? = nil) {
        if app.shape == .group { chatLost(at: wall, topic: topic) }
    }

    /// It stops sharing: a group's chat waiting to be tried again is given up.
    func shapeLeft() {
        if app.shape == .group { closeChatQueue(groupLeaveReason) }
    }

    /// It closes for good (`gone`: it had already): a group notes when it left its channels and what chat it is owed
    /// then; what is still in the outbox stays unsent.
    func shapeDisconnecting(gone: Bool, subscribed: Bool) {
        if app.shape == .group, !gone { groupDisconnecting(subscribed: subscribed) }
        abandonQueue()
    }

    /// Whether the shape has nothing queued or owed: rows to post again or to catch up on, a group's chat owed or its
    /// end still being tried, a mailbox's messages owed to this phone.
    var shapeSettled: Bool {
        pairwise.isSettled && group.isSettled && (profile.pollEvery == nil || context.mailbox.owed(to: index) == 0)
    }

    /// A row that would not open: true the first time (`rowID` nil: no row, always), false for the same row again (it
    /// came twice: live, then in a backfill).
    func firstFailure(ofRow rowID: Int64?) -> Bool {
        rowID.map { pairwise.undecryptableRows.insert($0).inserted } ?? true
    }

    /// An update from `sender` that would not open while this phone waits for that friend to read its new key.
    func undecryptableAfterMigration(from sender: Int32) {
        if pairwise.awaitingNewKey.contains(sender) { metrics.count(.migrationUndecryptable) }
    }

    /// An update from `sender` opened: if this phone was waiting for it after a migration, how long that took.
    func restoredAfterMigration(from sender: Int32) {
        if pairwise.awaitingNewKey.remove(sender) != nil, let migratedAt = pairwise.migratedAt {
            metrics.record(.migrationRestore, seconds: context.clock.now() - migratedAt)
        }
    }

    /// It is off its channels (it left, lost its connection, or a channel closed): a group counts it
    /// out of the presence its teammates should see.
    func offChannels() {
        if app.shape == .group { context.convergence.subscribed(index, false) }
    }

    /// A new Realtime connection: a group phone has opened no pair channel on it yet.
    func resetShapeChannels() {
        if app.shape == .group { resetDirect() }
    }

    /// A Realtime event about a channel of the shape's own (a group's pair channels for direct messages), which the
    /// shape handles whole: true when it did, and the phone's lifecycle must not read it as about its subscription.
    func shapeHandled(_ event: RealtimeClient.Event) -> Bool {
        app.shape == .group && directChannelEvent(event)
    }

    /// A join of the group's own channel refused with `reason`: true when the shape takes it as the end of the
    /// phone's part (a group's private channel that no longer lets the member in: its group ended, or it was taken
    /// out, while it was away; it stops, as the app does, rather than knocking for ever).
    func joinRefusalEnds(_ reason: String) -> Bool {
        guard app.shape == .group, reason.hasPrefix("Unauthorized") else { return false }
        groupEnded()
        return true
    }

    /// A friend's update shown: a group draws it on its team map too.
    func showOnShapeMap(_ sender: Int32, _ update: LocationPayload) {
        if app.shape == .group { group.teamMap.add(sender, lat: update.lat, lon: update.lon, ts: update.ts) }
    }
}
