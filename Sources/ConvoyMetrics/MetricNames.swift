/// The histograms and counters a run records, named once. Code records and
/// reads them through these constants (`metrics.record(.e2eLatency, …)`,
/// `snapshot[.sent]`), thresholds are checked against them before a run
/// starts, and docs/results.md describes each (a test keeps the two in step).
/// The names are the results' own: `histograms.json`, `summary.json`,
/// Prometheus and thresholds use them as written here.

/// A histogram of durations (microseconds inside, milliseconds in reports).
public struct HistogramName: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    init(_ name: String) { self.name = name }
    public var description: String { name }

    /// A histogram a run declares: a declared app's action, timed under its own name (`ride_claim`).
    public static func declared(_ name: String) -> HistogramName { HistogramName(name) }

    /// Whether `name` can be a declared histogram's: lowercase letters, digits and _, a letter first, and none of
    /// Convoy's own.
    public static func canDeclare(_ name: String) -> Bool {
        guard let first = name.first, first.isLetter, first.isLowercase,
              name.allSatisfy({ ($0.isLetter && $0.isLowercase && $0.isASCII) || $0.isNumber || $0 == "_" }) else { return false }
        return !all.contains { $0.name == name }
    }
}

/// A count.
public struct CounterName: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    init(_ name: String) { self.name = name }
    public var description: String { name }
}

extension HistogramName {
    /// Intended send time → decrypted at the recipient.
    public static let e2eLatency = HistogramName("e2e_latency")
    /// `commit_timestamp` → the Realtime message read off the socket.
    public static let commitToReceipt = HistogramName("commit_to_receipt")
    /// The bulk insert's round trip (successful ones).
    public static let post = HistogramName("post")
    /// The round trip of an insert that failed (a timeout's included).
    public static let postFailed = HistogramName("post_failed")
    /// An update sealed for one friend (the app's JSON, sealed, Base64), for an app that encrypts.
    public static let seal = HistogramName("seal")
    /// An update opened and validated, for an app that encrypts.
    public static let open = HistogramName("open")
    /// An app whose positions travel in the clear (Survale): an update written as the wire's JSON, and read back.
    public static let encode = HistogramName("encode")
    public static let decode = HistogramName("decode")
    /// Intended time → the job's start.
    public static let schedulerLag = HistogramName("scheduler_lag")
    /// Arrival → the channel's "Subscribed to PostgreSQL".
    public static let subscribe = HistogramName("subscribe")
    public static let signup = HistogramName("signup")
    public static let tokenRefresh = HistogramName("token_refresh")
    /// A sign-in with the phone's password after its refresh token was refused.
    public static let signInAgain = HistogramName("sign_in_again")
    public static let realtimeHeartbeat = HistogramName("realtime_heartbeat")
    /// One read of friends' public keys before a send (`key_lookup: every_send` or a cache miss).
    public static let keyLookup = HistogramName("key_lookup")
    public static let migrationRestore = HistogramName("migration_restore")
    public static let pairingRequest = HistogramName("pairing_request")
    /// The friend looked up before it is asked (QuickPic's `GET /users/:username`).
    public static let pairingLookup = HistogramName("pairing_lookup")
    /// A group's whole after-action replay loaded by its owner (every page of its archive and chat).
    public static let replayLoad = HistogramName("replay_load")
    /// A direct message between two members of a group: intended send → received.
    public static let directLatency = HistogramName("direct_latency")
    public static let pairingAccept = HistogramName("pairing_accept")
    public static let pairingAcceptLater = HistogramName("pairing_accept_later")
    public static let pairingFirstUpdate = HistogramName("pairing_first_update")
    public static let pairingFirstUpdateLater = HistogramName("pairing_first_update_later")
    /// Group apps: a phone tracks its presence → the last member online then sees it (a presence join).
    public static let presenceConvergence = HistogramName("presence_convergence")
    /// Group apps: a phone tracks its presence → one member sees it.
    public static let presenceSeen = HistogramName("presence_seen")
    /// Group apps: a broadcast sent with `ack` → the server's acknowledgement.
    public static let broadcastAck = HistogramName("broadcast_ack")
    /// Group apps: a message's intended send time → its arrival at a member (Survale: a chat line over `postgres_changes`).
    public static let messageLatency = HistogramName("message_latency")
    /// Group apps: posting a message, its round trip.
    public static let messagePost = HistogramName("message_post")
    /// Apps that archive a phone's positions: one batch's round trip.
    public static let archivePost = HistogramName("archive_post")
    /// Group apps: at each of a phone's ticks, how old the last position it shows of each online teammate is.
    public static let teammateStaleness = HistogramName("teammate_staleness")
    /// Group apps: a member who joins by request asks → it reads its request approved.
    public static let joinApproval = HistogramName("join_approval")
    /// Group apps: a member who joins by request asks → it is on its group's channel.
    public static let joinChannel = HistogramName("join_channel")
    /// Group apps: `join_channel` less the seconds the member or its owner had no network meanwhile (their network
    /// conditions' offline windows, their union): a phone in a tunnel neither hears nor gives an answer.
    public static let joinChannelOnline = HistogramName("join_channel_online")
    /// Group apps' chat media: intended send time → the upload done (Survale: a signed upload URL, then the bytes to it).
    public static let mediaUpload = HistogramName("media_upload")
    /// Group apps' chat media: intended send time → a member has downloaded it (its chat line heard, then the object fetched).
    public static let mediaLatency = HistogramName("media_latency")
    /// Group apps' chat media: a member's download, its round trip (Survale: a signed download URL, then the GET).
    public static let mediaDownload = HistogramName("media_download")
    /// Group apps: a message's intended send time → its loading by a member who was off its network when it was posted.
    public static let messageCatchUpLatency = HistogramName("message_catch_up_latency")
    /// Group apps' chat media: intended send time → downloaded by a member who loaded its chat line after a gap.
    public static let mediaCatchUpLatency = HistogramName("media_catch_up_latency")

    /// Every histogram a run may record.
    public static let all: [HistogramName] = [
        .e2eLatency, .commitToReceipt, .post, .postFailed, .seal, .open, .encode, .decode, .schedulerLag, .subscribe, .signup,
        .tokenRefresh, .signInAgain, .realtimeHeartbeat, .keyLookup, .migrationRestore, .replayLoad, .directLatency, .pairingLookup, .pairingRequest, .pairingAccept,
        .pairingAcceptLater, .pairingFirstUpdate, .pairingFirstUpdateLater, .presenceConvergence, .presenceSeen, .broadcastAck, .messageLatency, .messagePost, .archivePost,
        .teammateStaleness, .joinApproval, .joinChannel, .joinChannelOnline,
        .mediaUpload, .mediaLatency, .mediaDownload, .messageCatchUpLatency, .mediaCatchUpLatency,
    ] + mailbox
}

extension CounterName {
    // Sending and receiving.
    public static let updates = CounterName("updates")
    public static let sent = CounterName("sent")
    public static let sentOffline = CounterName("sent_offline")
    public static let sentOtherShards = CounterName("sent_other_shards")
    public static let received = CounterName("received")
    public static let duplicate = CounterName("duplicate")
    public static let staleRejected = CounterName("stale_rejected")
    /// Of the stale, those timestamped further in the future than the receiver's clock allows (`DeviceOptions.futureSkew`).
    public static let futureRejected = CounterName("future_rejected")
    public static let decryptFailures = CounterName("decrypt_failures")
    public static let sealFailures = CounterName("seal_failures")
    public static let receivedFromStrangers = CounterName("received_from_strangers")
    public static let receivedUnmatched = CounterName("received_unmatched")
    public static let receivedWithoutSeq = CounterName("received_without_seq")
    public static let receivedAfterRetention = CounterName("received_after_retention")
    public static let malformedRows = CounterName("malformed_rows")
    public static let renderDot = CounterName("render.dot")
    public static let renderCircle = CounterName("render.circle")
    public static let keyLookups = CounterName("key_lookups")
    public static let keyLookupFailures = CounterName("key_lookup_failures")
    public static let keyChangesSeen = CounterName("key_changes_seen")
    // The accounting, at the end.
    public static let delivered = CounterName("delivered")
    public static let lost = CounterName("lost")
    public static let devices = CounterName("devices")
    public static let devicesNeverSubscribed = CounterName("devices_never_subscribed")
    /// How late this process's first arrivals were after `--start-at`, in milliseconds (a gauge kept as a counter; shards merge to the latest).
    public static let startLateMs = CounterName("start_late_ms")
    // HTTP and Realtime.
    public static let httpRequests = CounterName("http_requests")
    public static let httpErrors = CounterName("http_errors")
    public static let reconnects = CounterName("reconnects")
    public static let disconnects = CounterName("disconnects")
    public static let realtimeJoinFailures = CounterName("realtime_join_failures")
    public static let realtimeChannelClosed = CounterName("realtime_channel_closed")
    public static let realtimeRejoins = CounterName("realtime_rejoins")
    public static let realtimeOtherChanges = CounterName("realtime_other_changes")
    public static let backfills = CounterName("backfills")
    public static let backfilled = CounterName("backfilled")
    public static let tokenRefreshes = CounterName("token_refreshes")
    public static let tokenRefreshFailures = CounterName("token_refresh_failures")
    /// Phones that refreshed their session at least once (each counted once).
    public static let tokenRefreshPhones = CounterName("token_refresh_phones")
    public static let signInsAgain = CounterName("sign_ins_again")
    /// Sign-ups that got no answer (a reset, a gateway's 502–504) and were tried again: signed in and finished, or made again.
    public static let signUpRetries = CounterName("signup_retries")
    // The retry queue (`retry: retry`).
    public static let retryQueued = CounterName("retry_queued")
    public static let retryPosted = CounterName("retry_posted")
    public static let retryGivenUp = CounterName("retry_given_up")
    // Positions and the phone's state.
    public static let gpsDropouts = CounterName("gps_dropouts")
    public static let backgroundSkipped = CounterName("background_skipped")
    public static let backgroundNotPermitted = CounterName("background_not_permitted")
    public static let liveShared = CounterName("live_shared")
    public static let liveNoFix = CounterName("live_no_fix")
    public static let liveFixesReceived = CounterName("live_fixes_received")
    // Pairing and migration.
    public static let pairingRequests = CounterName("pairing_requests")
    public static let pairingAccepted = CounterName("pairing_accepted")
    public static let pairingAcceptedLater = CounterName("pairing_accepted_later")
    public static let pairingDecidedLater = CounterName("pairing_decided_later")
    public static let pairingFriendsMade = CounterName("pairing_friends_made")
    public static let pairingUnexpectedRequests = CounterName("pairing_unexpected_requests")
    public static let pairingFailures = CounterName("pairing_failures")
    /// Requests the invitee said no to (`social.decline`, an app that has a "no").
    public static let pairingDeclined = CounterName("pairing_declined")
    /// Decide-later acceptances the backend refused because the request was gone (404: an invite expired unaccepted, as Closer's do after 24 h).
    public static let pairingRequestsGone = CounterName("pairing_requests_gone")
    /// Decide-later acceptances the backend took (`pairing_accepted_later` counts the attempts).
    public static let pairingAcceptedLaterSucceeded = CounterName("pairing_accepted_later_succeeded")
    public static let migrationReinstalls = CounterName("migration_reinstalls")
    public static let migrationReaccepted = CounterName("migration_reaccepted")
    public static let migrationUndecryptable = CounterName("migration_undecryptable")
    public static let migrationFailures = CounterName("migration_failures")
    // Probes and retention.
    public static let probeTries = CounterName("probe_tries")
    public static let probeLeaks = CounterName("probe_leaks")
    public static let probeFindings = CounterName("probe_findings")
    public static let probeRowsReceived = CounterName("probe_rows_received")
    public static let probeHostileUnmatched = CounterName("probe_hostile_unmatched")
    public static let retentionChecks = CounterName("retention_checks")
    public static let retentionScans = CounterName("retention_scans")
    public static let retentionViolations = CounterName("retention_violations")
    public static let retentionDeletedEarly = CounterName("retention_deleted_early")
    public static let retentionCheckErrors = CounterName("retention_check_errors")
    public static let retentionHTTPRequests = CounterName("retention_http_requests")

    // Families: a counter and its breakdown, `name.<detail>`.

    /// `http_errors.<status>`.
    public static func httpErrors(status: Int) -> CounterName { CounterName("\(httpErrors.name).\(status)") }
    /// `decrypt_failures.<reason>`.
    public static func decryptFailures(reason: String) -> CounterName { CounterName("\(decryptFailures.name).\(reason)") }
    /// `transport_errors.<kind>`.
    public static func transportErrors(kind: String) -> CounterName { CounterName("transport_errors.\(kind)") }
    /// `lost.<reason>` (the accounting's reasons).
    public static func lost(reason: String) -> CounterName { CounterName("\(lost.name).\(reason)") }

    // Group apps (Survale).
    /// Presence tracked by a phone (each time it subscribes).
    public static let presenceTracks = CounterName("presence_tracks")
    /// Tracks that some member online throughout never saw.
    public static let presenceUnconverged = CounterName("presence_unconverged")
    /// Updates a phone could not send because its group's channel was not joined at the time.
    public static let groupNotJoined = CounterName("group_not_joined")
    /// Phones that saw their group end (its owner ended it, or the backend did).
    public static let groupEndedSeen = CounterName("group_ended_seen")
    /// Group updates sent from a GPS-denied fix (Wi-Fi or cell), flagged reduced; and received so flagged.
    public static let reducedAccuracySent = CounterName("reduced_accuracy_sent")
    public static let reducedAccuracyReceived = CounterName("reduced_accuracy_received")
    /// Group messages posted, the receipts expected (members online when posted), received, and posts that failed.
    public static let messagesSent = CounterName("messages_sent")
    public static let messagesExpected = CounterName("messages_expected")
    public static let messagesReceived = CounterName("messages_received")
    public static let messagesFailed = CounterName("messages_failed")
    /// Positions archived (rows), and batches that failed (kept for the next round).
    public static let archived = CounterName("archived")
    public static let archiveFailures = CounterName("archive_failures")
    /// Group apps' join requests: asked, checked again (polls), approved by an owner, and failed requests.
    public static let joinRequests = CounterName("join_requests")
    public static let joinPolls = CounterName("join_polls")
    public static let joinApproved = CounterName("join_approved")
    public static let joinRequestFailures = CounterName("join_request_failures")
    /// Group apps: members who left their group during the run, and came back onto its channels.
    public static let groupLeaves = CounterName("group_leaves")
    public static let groupRejoins = CounterName("group_rejoins")
    /// Chat posts tried again after a failure (each attempt), text and media.
    public static let messagesRetried = CounterName("messages_retried")
    /// Group media (photos, videos): posted (uploaded, and its chat line inserted), the downloads expected (members
    /// online when posted), done by a member, failed at a member (`media_lost.<reason>`), given up by the sender
    /// (`media_failed.<reason>`), and attempts tried again.
    public static let mediaSent = CounterName("media_sent")
    public static let mediaExpected = CounterName("media_expected")
    public static let mediaReceived = CounterName("media_received")
    public static let mediaFailed = CounterName("media_failed")
    public static let mediaLost = CounterName("media_lost")
    public static let mediaRetried = CounterName("media_retried")
    /// After-action replays loaded, the rows they brought (positions and chat lines), and those that failed.
    public static let replays = CounterName("replays")
    /// Direct messages sent, received, not sent to a partner off line (nobody expects them), failed to send, and lost.
    public static let directSent = CounterName("direct_sent")
    public static let directReceived = CounterName("direct_received")
    public static let directToOffline = CounterName("direct_to_offline")
    /// Direct messages not sent to a partner online whose pair channel the sender had not opened (it had not seen the
    /// partner on the group's channel yet); pair channels joined, and refused or closed (let go until the partner is seen again).
    public static let directNotOpen = CounterName("direct_not_open")
    public static let directChannelsJoined = CounterName("direct_channels_joined")
    public static let directChannelsRefused = CounterName("direct_channels_refused")
    /// Group apps: an owner's end of its group tried again after it failed for a curable reason (no network, a 5xx).
    public static let groupEndRetries = CounterName("group_end_retries")
    public static let directFailures = CounterName("direct_failures")
    public static let directLost = CounterName("direct_lost")
    public static let replayRows = CounterName("replay_rows")
    public static let replayFailures = CounterName("replay_failures")
    /// Downloads tried again after one failed for a reason a retry can cure (no answer, or "later").
    public static let mediaDownloadRetries = CounterName("media_download_retries")
    /// Media bytes uploaded (each attempt that completed) and downloaded; upload progress reports (libcurl's).
    public static let mediaBytesUp = CounterName("media_bytes_up")
    public static let mediaBytesDown = CounterName("media_bytes_down")
    public static let mediaProgress = CounterName("media_progress")
    /// Group chat after a gap: catch-up passes (each a comeback or a retry), and of the received lines and media
    /// those loaded by it rather than heard live; the lines expected that no member had at the end (`messages_lost.<reason>`).
    public static let chatCatchUps = CounterName("chat_catch_ups")
    public static let messagesCaughtUp = CounterName("messages_caught_up")
    public static let mediaCaughtUp = CounterName("media_caught_up")
    public static let messagesLost = CounterName("messages_lost")

    /// `messages_failed.<reason>`, `messages_lost.<reason>`, `media_failed.<reason>`, `media_lost.<reason>`.
    public static func messagesFailed(reason: String) -> CounterName { CounterName("\(messagesFailed.name).\(reason)") }
    public static func messagesLost(reason: String) -> CounterName { CounterName("\(messagesLost.name).\(reason)") }
    public static func mediaFailed(reason: String) -> CounterName { CounterName("\(mediaFailed.name).\(reason)") }
    public static func mediaLost(reason: String) -> CounterName { CounterName("\(mediaLost.name).\(reason)") }

    /// Every counter a run may record, families aside.
    public static let all: [CounterName] = [
        .updates, .sent, .sentOffline, .sentOtherShards, .received, .duplicate, .staleRejected, .futureRejected, .decryptFailures,
        .sealFailures, .receivedFromStrangers, .receivedUnmatched, .receivedWithoutSeq, .receivedAfterRetention,
        .malformedRows, .renderDot, .renderCircle, .keyLookups, .keyLookupFailures, .keyChangesSeen,
        .delivered, .lost, .devices, .devicesNeverSubscribed, .startLateMs,
        .httpRequests, .httpErrors, .reconnects, .disconnects, .realtimeJoinFailures, .realtimeChannelClosed,
        .realtimeRejoins, .realtimeOtherChanges, .backfills, .backfilled, .tokenRefreshes, .tokenRefreshFailures, .tokenRefreshPhones,
        .signInsAgain, .signUpRetries, .retryQueued, .retryPosted, .retryGivenUp,
        .gpsDropouts, .backgroundSkipped, .backgroundNotPermitted, .liveShared, .liveNoFix, .liveFixesReceived,
        .pairingRequests, .pairingAccepted, .pairingAcceptedLater, .pairingDecidedLater, .pairingFriendsMade,
        .pairingUnexpectedRequests, .pairingFailures, .pairingDeclined, .pairingRequestsGone, .pairingAcceptedLaterSucceeded, .migrationReinstalls, .migrationReaccepted,
        .migrationUndecryptable, .migrationFailures,
        .probeTries, .probeLeaks, .probeFindings, .probeRowsReceived, .probeHostileUnmatched,
        .retentionChecks, .retentionScans, .retentionViolations, .retentionDeletedEarly, .retentionCheckErrors,
        .retentionHTTPRequests, .presenceTracks, .presenceUnconverged, .groupNotJoined, .groupEndedSeen,
        .reducedAccuracySent, .reducedAccuracyReceived, .messagesSent, .messagesExpected, .messagesReceived, .messagesFailed,
        .archived, .archiveFailures, .joinRequests, .joinPolls, .joinApproved, .joinRequestFailures, .groupLeaves, .groupRejoins, .messagesRetried,
        .mediaSent, .mediaExpected, .mediaReceived, .mediaFailed, .mediaLost,
        .mediaRetried, .mediaDownloadRetries, .replays, .replayRows, .replayFailures, .directSent, .directReceived, .directToOffline, .directNotOpen, .directChannelsJoined, .directChannelsRefused, .groupEndRetries, .directFailures, .directLost, .mediaBytesUp, .mediaBytesDown, .mediaProgress, .chatCatchUps, .messagesCaughtUp, .mediaCaughtUp, .messagesLost,
    ] + mailbox

    /// The families' prefixes: `prefix.<anything>` is a counter of that family.
    public static let families = ["http_errors", "decrypt_failures", "transport_errors", "lost", "messages_failed", "messages_lost", "media_failed",
                                  "media_lost"] + mailboxFamilies + actionFamilies

    /// A declared app's actions, by the action's name (`AppAction`): made, skipped with nothing to act on, failed.
    public static let actionFamilies = ["actions", "action_skipped", "action_failures"]

    /// A counter of one of the families, named as a run declares it (`actions.ride_claim`).
    public static func declared(_ name: String) -> CounterName { CounterName(name) }

    /// Whether `name` is a counter a run records (one of `all`, or of a family).
    public static func isKnown(_ name: String) -> Bool {
        all.contains { $0.name == name }
            || families.contains { name.hasPrefix($0 + ".") && name.count > $0.count + 1 }
    }
}

extension Metrics {
    public func record(_ timing: HistogramName, microseconds: UInt64) { record(timing.name, microseconds: microseconds) }
    public func record(_ timing: HistogramName, seconds: Double) { record(timing.name, seconds: seconds) }
    public func count(_ counter: CounterName, by n: Int = 1) { count(counter.name, by: n) }
}

extension MetricsSnapshot {
    public func statistic(_ timing: HistogramName, _ stat: String) -> Double? { statistic(timing.name, stat) }
}

extension [String: Int] {
    /// A counter's total in counters keyed by name (0 when never counted).
    public subscript(_ counter: CounterName) -> Int {
        get { self[counter.name] ?? 0 }
        set { self[counter.name] = newValue }
    }
}
