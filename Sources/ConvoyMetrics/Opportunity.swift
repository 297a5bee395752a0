/// No verdict without a test: a threshold on a count of failures (`decrypt_failures == 0`) that the run never gave
/// a chance to happen (nothing was received) has not been tested, and must not pass at 0. Each such counter names
/// the counters of its chances (its attempts; it counts as one of them itself); when all are 0 the threshold has
/// no value, fails, and says "not tested in this run" with the reason below. Judged from the counters alone, so a
/// merge of shards (`convoy merge`) judges it the same way on the merged counts.
public enum Opportunity {
    struct Rule {
        /// The counter, or a family (`decrypt_failures` covers `decrypt_failures.bad_key`).
        let counter: String
        let chances: [String]
        let why: String
    }

    static let rules: [Rule] = [
        Rule(counter: "decrypt_failures", chances: ["received"], why: "nothing was received to decrypt"),
        Rule(counter: "received_unmatched", chances: ["received"], why: "nothing was received"),
        Rule(counter: "lost", chances: ["sent"], why: "no location update was sent"),
        Rule(counter: "token_refresh_failures", chances: ["token_refreshes"],
             why: "no session came due for a token refresh (its tokens outlive the run)"),
        Rule(counter: "pairing_accepted_later_succeeded", chances: ["pairing_accepted_later"],
             why: "no decide-later acceptance came due before the run ended"),
        Rule(counter: "pairing_failures", chances: ["pairing_requests"], why: "no pairing was asked for"),
        Rule(counter: "http_errors", chances: ["http_requests"], why: "no HTTP request was made"),
        Rule(counter: "messages_lost", chances: ["messages_expected"], why: "no chat line was expected at anyone"),
        Rule(counter: "messages_failed", chances: ["messages_sent"], why: "no chat line was posted"),
        Rule(counter: "media_lost", chances: ["media_expected"], why: "no photo was expected at anyone"),
        Rule(counter: "media_failed", chances: ["media_sent"], why: "no photo was posted"),
        Rule(counter: "mailbox_lost", chances: ["mailbox_sent"], why: "no mailbox message was sent"),
        Rule(counter: "mailbox_after_ack", chances: ["mailbox_acks"], why: "no message was acknowledged"),
        Rule(counter: "mailbox_ack_failures", chances: ["mailbox_acks"], why: "no message was acknowledged"),
        Rule(counter: "relogin_failures", chances: ["relogins"], why: "no phone had to sign in again"),
        Rule(counter: "mailbox_rejected", chances: ["mailbox_received"], why: "no mailbox message was received to verify"),
        Rule(counter: "mailbox_send_failed", chances: ["mailbox_sent"], why: "no mailbox message was sent"),
        Rule(counter: "key_lookup_failures", chances: ["key_lookups"], why: "no friend's key was looked up"),
        Rule(counter: "migration_failures", chances: ["migration_reinstalls"], why: "no phone was reinstalled"),
        Rule(counter: "presence_unconverged", chances: ["presence_tracks"], why: "no phone tracked its presence"),
        Rule(counter: "probe_leaks", chances: ["probe_tries"], why: "no probe was tried"),
        Rule(counter: "probe_findings", chances: ["probe_tries"], why: "no probe was tried"),
        Rule(counter: "direct_failures", chances: ["direct_sent"], why: "no direct message was sent"),
        Rule(counter: "direct_lost", chances: ["direct_sent"], why: "no direct message was sent"),
        Rule(counter: "join_request_failures", chances: ["join_requests"], why: "no phone asked to join a group"),
        Rule(counter: "archive_failures", chances: ["archived"], why: "no position was archived"),
        Rule(counter: "replay_failures", chances: ["replays"], why: "no replay was loaded"),
        Rule(counter: "outcome_reminders_missed", chances: ["outcome_reminders_due"],
             why: "no couple reached its 30-day mark early enough for its reminder to come due before the run ended"),
    ]

    /// Why `counter` had no chance to count anything in a run with `counters`; nil when it had (or when it is not a
    /// count of failures, e.g. `delivered`, whose threshold fails on its own at 0).
    public static func untested(_ counter: String, in counters: [String: Int]) -> String? {
        func total(_ names: [String]) -> Int {
            counters.reduce(0) { sum, c in names.contains { c.key == $0 || c.key.hasPrefix($0 + ".") } ? sum + c.value : sum }
        }
        // A declared action's failures and skips: the action ran, failed or was skipped at least once.
        for family in ["action_failures", "action_skipped"] where counter.hasPrefix(family + ".") {
            let action = String(counter.dropFirst(family.count + 1))
            let chances = ["actions.", "action_failures.", "action_skipped."].map { $0 + action }
            return total(chances) == 0 ? "\(action) never came due in this run" : nil
        }
        guard let rule = rules.first(where: { counter == $0.counter || counter.hasPrefix($0.counter + ".") }) else { return nil }
        return total(rule.chances + [counter]) == 0 ? rule.why : nil
    }

    /// Why the retention check could not measure a counter it left unmeasured (`RetentionReport.unmeasured`).
    static func unmeasured(_ counter: String) -> String {
        switch counter {
        case "retention_violations": "no row reached the retention limit before the last check"
        case "retention_deleted_early": "no row young enough to be due was looked for"
        default: "the run could not measure it"
        }
    }
}
