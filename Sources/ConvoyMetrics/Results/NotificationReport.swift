/// The notifications an app's backend owed the run's phones (Closer's 30/60/90-day outcome reminders, sent by FCM),
/// and what came of them (summary.json `mailbox.notifications`; docs/results.md, "Mailbox").
public struct NotificationReport: Codable, Sendable, Equatable {
    /// Reminders owed: each partner of a couple made in the run, at each mark it reached early enough for the scan
    /// (`reminder_every`) and delivery (a few seconds) to come before the end, while its phone was connected.
    public var due = 0
    /// Of them, received by the phone.
    public var received = 0
    /// Of them, not received (`missed.<reason>`).
    public var missed: [String: Int] = [:]
    /// Why nothing was owed, when nothing was (the run too short for any couple to reach its first mark).
    public var notTested: String?
    /// Every notification the phones received, by kind (reminders owed or not, partner-answered ones).
    public var receivedByKind: [String: Int] = [:]
    /// The couples' day and the scan's interval the accounting used, seconds.
    public var outcomeDay: Double = 0
    public var reminderEvery: Double = 0

    public init() {}

    public var missedTotal: Int { missed.values.reduce(0, +) }

    enum CodingKeys: String, CodingKey {
        case due, received, missed
        case notTested = "not_tested"
        case receivedByKind = "received_by_kind"
        case outcomeDay = "outcome_day_s"
        case reminderEvery = "reminder_every_s"
    }
}
