import ConvoyMetrics
import ConvoyWire

/// The pairwise shape's catch-up (greenbox-prd.md §4.4): after a gap, the rows the app has for this
/// phone since it was last listening, page by page; and the last rows received, for the retention
/// checker's "deleted early" check.
extension VirtualDevice {
    /// Catches up after a reconnect: what the app has for this device since
    /// `since` (Unix seconds, minus a lookback for clock skew and commit order),
    /// page by page. Updates it already has are duplicates and are dropped by `seq`.
    ///
    /// What is owed is kept until a pass completes: a comeback while a pass runs asks for another
    /// pass, and a pass that fails (the phone lost its network again) leaves it for the next comeback.
    func backfill(since: Double) async {
        guard var from = pairwise.owe(since: since) else { return }
        while true {
            let read = await backfillPass(from: from - context.options.backfillLookback)
            switch pairwise.passEnded(read: read) {
            case .again(let next) where !isGone: from = next
            case .again: return pairwise.stopCatchingUp()
            case .done: return
            case .retryLater:
                // No answer (its network went again, or the backend is down): try again in a while, as long as it receives.
                context.scheduler.at(context.clock.now() + 2) { [weak self] _ in
                    guard let self, await self.life.isReceiving, let owed = await self.pairwise.owedSince else { return }
                    await self.backfill(since: owed)
                }
                return
            }
        }
    }

    /// One catch-up from `from` to now, page by page; false when a page could not be read.
    private func backfillPass(from: Double) async -> Bool {
        metrics.count(.backfills)
        var after: Int64 = 0
        let page = context.options.backfillPage
        while !isGone {
            let fetched: CatchUpPage
            do {
                fetched = try await pairwiseApp.catchUp(for: account.userID, since: from, after: after, limit: page, token: account.session.accessToken,
                                                via: http)
                metrics.count(.httpRequests)
            } catch {
                metrics.count(.httpRequests)
                spendHTTP(body: 0)
                _ = countFailure(error)
                return false
            }
            spendHTTP(body: 0, response: fetched.bytes)
            let before = after
            after = fetched.cursor
            for update in fetched.updates {
                metrics.count(.backfilled)
                receive(update, backfilled: true)
            }
            // A short page is the last; a page whose ids did not move the cursor would repeat.
            if fetched.updates.count < page || after == before { return true }
        }
        return false
    }

    /// Keeps the last few rows received (id, server creation time) for the retention checker's "deleted early" check.
    func remember(row: Int64, createdAt: Double) {
        if pairwise.recentRows.count >= Self.recentRowsKept { pairwise.recentRows.removeFirst() }
        pairwise.recentRows.append((row, createdAt))
    }

    static let recentRowsKept = 8

    /// What the retention checker needs while the device is online and subscribed: who it is,
    /// its current token, and the last rows it received; nil otherwise.
    func retentionView() -> (userID: String, token: String, recent: [(id: Int64, createdAt: Double)])? {
        guard case .pairwise(let s) = shape, life.onlineSince != nil, life.subscribed else { return nil }
        return (account.userID, account.session.accessToken, s.recentRows)
    }
}
