import ConvoyCrypto
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

    /// Connected: the shape's own timers (a group's archive of its members' positions, and its owner's replays).
    func scheduleShapeTimers(from intended: Double) {
        guard app.shape == .group, let every = app.archiveEvery else { return }
        context.scheduler.at(intended + every) { [weak self] t in await self?.flushArchive(intended: t) }
        scheduleReplays(from: intended)
        scheduleDirect(from: intended)
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
