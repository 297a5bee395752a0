import ConvoyMetrics
import ConvoyWire

/// Group apps' chat after a gap (Survale, spec §6: the operation's chat is stored; §11: a phone coming back
/// catches up). A member off its network when a line is posted never hears it over Realtime; when its chat
/// channel is subscribed again, the phone loads the lines posted since it lost the channel (less
/// `backfill_lookback`: rows are stamped by the server's clock) through the app, a page at a time, in a task
/// of its own, as Green Box's phone backfills its locations. A line it already has (heard live, or loaded
/// before) is dropped by sender and seq; the others are received as live ones are, and the media they name
/// downloaded the same way, counted apart (`messages_caught_up`, `media_caught_up`) with their own latency
/// (`message_catch_up_latency`, `media_catch_up_latency`). A pass that fails keeps what is owed: it is tried
/// again 2 s later while the phone receives and is subscribed, and at its next comeback.
extension VirtualDevice {
    /// Whether `topic` is the channel its group's messages arrive on.
    func carriesMessages(_ topic: String) -> Bool {
        groupChannels.contains { $0.topic == topic && $0.carriesMessages }
    }

    /// Its chat channel went down at `wall` (the connection dropped, or the channel closed).
    func chatLost(at wall: Double, topic: String? = nil) {
        guard case .group = shape, topic.map(carriesMessages) ?? true else { return }
        group.missedChat.lost(at: wall)
    }

    /// A channel is subscribed: its chat channel again after a loss, the lines missed meanwhile are loaded.
    func chatSubscribed(_ topic: String) {
        guard case .group = shape, context.options.catchUpChat, carriesMessages(topic), let from = group.missedChat.subscribed() else { return }
        tasks.append(Task { [weak self] in await self?.loadMissedChat(from: from) })
    }

    /// Passes from `from` (wall clock) until nothing more is owed, or one fails (then tried again later).
    func loadMissedChat(from: Double) async {
        let ok = await chatCatchUpPass(since: from - context.options.backfillLookback)
        if let next = group.missedChat.passEnded(ok: ok) {
            await loadMissedChat(from: next)
            return
        }
        guard !ok, group.missedChat.isOwed, !isGone else { return }
        context.scheduler.at(context.clock.now() + 2) { [weak self] _ in await self?.retryChatCatchUp() }
    }

    /// A failed pass, again: while it receives and is not waiting for a comeback (which would start one).
    func retryChatCatchUp() async {
        guard life.isReceiving, !life.awaitingComeback, let from = group.missedChat.start() else { return }
        await loadMissedChat(from: from)
    }

    /// One load of the chat since `since` (wall clock), page by page; false when a page could not be read.
    private func chatCatchUpPass(since: Double) async -> Bool {
        metrics.count(.chatCatchUps)
        let clock = context.clock
        var pager = ChatPager(size: context.options.backfillPage)
        while !isGone {
            let started = clock.now()
            let page: MissedMessages
            do {
                page = try await groupApp.missedMessages(for: account.session, since: since, after: pager.cursor, limit: pager.size, via: http)
            } catch {
                metrics.count(.httpRequests)
                spendHTTP(body: 0, since: started)
                _ = countFailure(error)
                return false
            }
            metrics.count(.httpRequests)
            spendHTTP(body: 0, response: page.bytes, since: started)
            if page.malformed > 0 { metrics.count(.malformedRows, by: page.malformed) }
            let now = clock.wallNow()
            for line in page.lines { receiveMessage(line.message, from: line.sender, at: now, caughtUp: true) }
            guard pager.advance(rows: page.rows, to: page.cursor) else { return true }
        }
        return false
    }

    /// It is gone (the end of its run) still owed the chat: what it misses since then is lost `never_back`.
    func chatGone() {
        guard let owed = group.missedChat.owedSince else { return }
        let since = owed - context.options.backfillLookback
        context.messages.neverBack(index, since: since)
        context.media.neverBack(index, since: since)
    }
}
