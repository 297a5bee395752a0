/// What a group app's phone owes itself of its group's chat (`VirtualDevice+ChatCatchUp`): once its chat
/// channel has been subscribed, every loss of that channel (the connection dropped, the channel closed) leaves
/// the lines posted meanwhile to load when it is subscribed again. One pass at a time; a comeback during a
/// pass asks for another; a loss during a pass keeps the debt from the older loss; a pass that fails keeps it
/// too, for a retry or the next comeback.
struct MissedChat: Sendable, Equatable {
    /// Since when (wall clock) lines may have been missed and not loaded yet; nil: nothing owed.
    private(set) var owedSince: Double?
    /// A pass is under way.
    private(set) var running = false
    /// The chat channel has been subscribed at least once (before that there is nothing to miss).
    private(set) var subscribedOnce = false
    private var again = false
    private var lostMeanwhile = false

    var isOwed: Bool { owedSince != nil }

    /// The chat channel went down at `wall`.
    mutating func lost(at wall: Double) {
        guard subscribedOnce else { return }
        owedSince = min(owedSince ?? wall, wall)
        if running { lostMeanwhile = true }
    }

    /// The chat channel is subscribed (again): where a pass should load from now, if one is due.
    mutating func subscribed() -> Double? {
        subscribedOnce = true
        return start()
    }

    /// Starts a pass if something is owed and none runs: from when (wall clock). One running is asked to go again.
    mutating func start() -> Double? {
        guard let owed = owedSince else { return nil }
        if running {
            again = true
            return nil
        }
        (running, lostMeanwhile) = (true, false)
        return owed
    }

    /// The pass ended (`ok`: every page read): nothing is owed unless the channel went down meanwhile or it
    /// failed. Where the next pass loads from when another was asked for meanwhile.
    mutating func passEnded(ok: Bool) -> Double? {
        if ok && !lostMeanwhile { owedSince = nil }
        running = false
        guard again else { return nil }
        again = false
        return start()
    }
}

/// Keyset paging over a catch-up's pages: from cursor 0, each page's cursor the next one's start; a page
/// shorter than asked is the last, and so is one that did not move the cursor (it would repeat).
struct ChatPager: Sendable, Equatable {
    let size: Int
    private(set) var cursor: Int64 = 0
    private(set) var pages = 0

    init(size: Int) { self.size = max(1, size) }

    /// Takes in a page of `rows` ending at `next`; whether another page should be read.
    mutating func advance(rows: Int, to next: Int64) -> Bool {
        pages += 1
        let before = cursor
        cursor = max(cursor, next)
        return rows >= size && cursor != before
    }
}
