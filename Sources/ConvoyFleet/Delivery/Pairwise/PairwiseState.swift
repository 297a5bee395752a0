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
}
