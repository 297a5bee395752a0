/// Mailbox apps (QuickPic): direct messages stored by the backend until their recipient, polling, fetches and
/// acknowledges them (docs/results.md, "Mailbox").
extension HistogramName {
    /// Intended send time → decrypted by the recipient after the poll that found it.
    public static let mailboxLatency = HistogramName("mailbox_latency")
    /// Stored by the backend → the poll that found it began: the part of `mailbox_latency` that is the poll interval.
    public static let mailboxPollWait = HistogramName("mailbox_poll_wait")
    /// The rest of `mailbox_latency`: the send (seal, upload, store) before, the fetch and the decryption after.
    public static let mailboxTransfer = HistogramName("mailbox_transfer")
    /// A send's round trip (`POST /messages`), successful ones.
    public static let mailboxPost = HistogramName("mailbox_post")
    /// A poll's round trip (`GET /messages`).
    public static let mailboxPoll = HistogramName("mailbox_poll")
    /// An acknowledgement's round trip (`POST /messages/:id/ack`).
    public static let mailboxAck = HistogramName("mailbox_ack")
    /// Logging out and in again, the two round trips.
    public static let relogin = HistogramName("relogin")
    /// A listener app's held connection (Closer's Firestore Listen): asked for → open.
    public static let listenOpen = HistogramName("listen_open")
    /// Closer's outcome reminders: the couple reached its 30/60/90-day mark → the phone received the reminder (the
    /// scan's interval included: the manual's cron runs each minute).
    public static let outcomeReminder = HistogramName("outcome_reminder")

    static let mailbox: [HistogramName] = [.mailboxLatency, .mailboxPollWait, .mailboxTransfer, .mailboxPost, .mailboxPoll, .mailboxAck, .relogin,
                                           .listenOpen, .outcomeReminder]
}

extension CounterName {
    /// Messages posted (the backend answered with an id), photos among them, and sends that failed (`mailbox_send_failed.<reason>`).
    public static let mailboxSent = CounterName("mailbox_sent")
    public static let mailboxPhotosSent = CounterName("mailbox_photos_sent")
    public static let mailboxSendFailed = CounterName("mailbox_send_failed")
    /// Message bodies up (sends) and poll responses down, bytes as libcurl counted them (headers included).
    public static let mailboxBytesUp = CounterName("mailbox_bytes_up")
    public static let mailboxBytesDown = CounterName("mailbox_bytes_down")
    /// Polls that succeeded, those that found nothing, and those that failed.
    public static let mailboxPolls = CounterName("mailbox_polls")
    public static let mailboxPollsEmpty = CounterName("mailbox_polls_empty")
    public static let mailboxPollFailures = CounterName("mailbox_poll_failures")
    /// Messages opened and shown; refused by their recipient (`mailbox_rejected.<reason>`: a signature that does not
    /// verify, a sender who is no friend, content that is not what its label says); fetched again after being shown
    /// while its acknowledgement had not gone through (`mailbox_duplicates`).
    public static let mailboxReceived = CounterName("mailbox_received")
    public static let mailboxRejected = CounterName("mailbox_rejected")
    public static let mailboxDuplicates = CounterName("mailbox_duplicates")
    /// Acknowledgements that succeeded, that failed, and that found the message gone already (404).
    public static let mailboxAcks = CounterName("mailbox_acks")
    public static let mailboxAckFailures = CounterName("mailbox_ack_failures")
    public static let mailboxAckGone = CounterName("mailbox_ack_gone")
    /// Messages fetched again after their acknowledgement succeeded: the backend did not delete them.
    public static let mailboxAfterAck = CounterName("mailbox_after_ack")
    /// The accounting at the end: delivered, and lost (`mailbox_lost.<reason>`).
    public static let mailboxDelivered = CounterName("mailbox_delivered")
    public static let mailboxLost = CounterName("mailbox_lost")
    /// A listener app's held connections (Closer's Firestore Listen): opened, failed to open, messages the backend
    /// pushed down them, and their bytes each way.
    public static let listenConnections = CounterName("listen_connections")
    public static let listenFailures = CounterName("listen_failures")
    public static let listenPushes = CounterName("listen_pushes")
    public static let listenBytesDown = CounterName("listen_bytes_down")
    public static let listenBytesUp = CounterName("listen_bytes_up")
    /// Keepalive pings on a quiet held connection.
    public static let listenKeepalives = CounterName("listen_keepalives")
    /// Notifications received (`notifications_received.<kind>`); Closer's outcome reminders owed, received and missed
    /// (counted at the end: `outcome_reminders_missed.<reason>`).
    public static let notificationsReceived = CounterName("notifications_received")
    public static func notificationsReceived(kind: String) -> CounterName { CounterName("\(notificationsReceived.name).\(kind)") }
    public static let outcomeRemindersDue = CounterName("outcome_reminders_due")
    public static let outcomeRemindersReceived = CounterName("outcome_reminders_received")
    public static let outcomeRemindersMissed = CounterName("outcome_reminders_missed")
    public static func outcomeRemindersMissed(reason: String) -> CounterName { CounterName("\(outcomeRemindersMissed.name).\(reason)") }
    /// Logouts followed by a login, and those that failed.
    public static let relogins = CounterName("relogins")
    public static let reloginFailures = CounterName("relogin_failures")

    /// `mailbox_send_failed.<reason>`, `mailbox_rejected.<reason>`, `mailbox_lost.<reason>`.
    public static func mailboxSendFailed(reason: String) -> CounterName { CounterName("\(mailboxSendFailed.name).\(reason)") }
    public static func mailboxRejected(reason: String) -> CounterName { CounterName("\(mailboxRejected.name).\(reason)") }
    public static func mailboxLost(reason: String) -> CounterName { CounterName("\(mailboxLost.name).\(reason)") }

    static let mailbox: [CounterName] = [
        .mailboxSent, .mailboxPhotosSent, .mailboxSendFailed, .mailboxBytesUp, .mailboxBytesDown, .mailboxPolls, .mailboxPollsEmpty,
        .mailboxPollFailures, .mailboxReceived, .mailboxRejected, .mailboxDuplicates, .mailboxAcks, .mailboxAckFailures, .mailboxAckGone,
        .mailboxAfterAck, .mailboxDelivered, .mailboxLost, .relogins, .reloginFailures,
        .listenConnections, .listenFailures, .listenPushes, .listenBytesDown, .listenBytesUp, .listenKeepalives,
        .notificationsReceived, .outcomeRemindersDue, .outcomeRemindersReceived, .outcomeRemindersMissed,
    ]
    static let mailboxFamilies = ["mailbox_send_failed", "mailbox_rejected", "mailbox_lost", "notifications_received", "outcome_reminders_missed"]
}
