/// What a phone of a pairwise app keeps (Green Box: each update sealed to each friend, inserted as a
/// row, pushed over `postgres_changes`): the catch-up of rows after a gap, the rows it has seen, a
/// reinstall's friends whose rows do not open yet, and the ticks waiting to be posted again. The phone
/// holds one, `VirtualDevice.pairwise`.
struct PairwiseState: Sendable {
    /// A catch-up (backfill) is running; the catch-up still owed since then (wall clock), and whether a
    /// comeback asked for another pass meanwhile.
    var backfilling = false
    var owedSince: Double?
    var backfillAgain = false
    /// Rows that did not open, by id: each counted once however often it arrives.
    var undecryptableRows: Set<Int64> = []
    /// The last rows received (id, server creation time, Unix seconds), for the retention checker.
    var recentRows: [(id: Int64, createdAt: Double)] = []
    /// When this device reinstalled (PRD §4.1), and the friends whose updates do not open yet.
    var migratedAt: Double?
    var awaitingNewKey: Set<Int32> = []
    /// When its friends' keys were last read (`key_lookup: cached`).
    var keysReadAt: Double?
    /// Recovery (`VirtualDevice+Recovery`): ticks waiting to be posted again, whether a flush is scheduled
    /// or under way, and whether an insert is in flight (with `retry: retry`, later ticks queue behind it).
    var outbox: [VirtualDevice.Queued] = []
    var flushPending = false
    var posting = false

    /// Nothing queued to post again, no catch-up running or owed.
    var isSettled: Bool { outbox.isEmpty && owedSince == nil && !backfilling }

    // MARK: The catch-up's decisions (the phone does what they return: `VirtualDevice+Backfill`)

    /// What the phone does after a catch-up pass.
    enum AfterPass: Equatable {
        /// Another pass from `from` (wall clock): a comeback asked for one while this pass ran.
        case again(from: Double)
        /// Caught up: nothing is owed any more.
        case done
        /// The pass could not read a page (no network, the backend down): what is owed since `since` is tried again later.
        case retryLater(since: Double)
    }

    /// A catch-up is owed since `since` (a comeback): where a pass should start now, or nil when one is running, which
    /// then goes once more when it ends (what is owed is the earliest of every comeback's since).
    mutating func owe(since: Double) -> Double? {
        owedSince = min(owedSince ?? since, since)
        guard !backfilling else {
            backfillAgain = true
            return nil
        }
        backfilling = true
        backfillAgain = false
        return owedSince
    }

    /// A pass ended (`read`: every page was read): what comes next. What is owed is cleared only by a pass that read
    /// everything with no comeback meanwhile.
    mutating func passEnded(read: Bool) -> AfterPass {
        guard let owed = owedSince else {
            backfilling = false
            return .done
        }
        guard read else {
            backfilling = false
            return .retryLater(since: owed)
        }
        if backfillAgain {
            backfillAgain = false
            return .again(from: owed)
        }
        owedSince = nil
        backfilling = false
        return .done
    }

    /// The phone is gone: no pass runs any more (what is owed stays owed).
    mutating func stopCatchingUp() { backfilling = false }
}
