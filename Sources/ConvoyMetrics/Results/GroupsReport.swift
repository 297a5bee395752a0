import Foundation

/// What happened to a group app's groups (summary.json's `groups`; Survale's
/// operations): how many there were, and for the ones the scenario abandoned
/// (every member left, nobody ended it), whether the backend ended them
/// between `auto_end` and `auto_end` + grace after their last member left; and
/// that no group a member was still on was ended by the backend.
public struct GroupsReport: Codable, Sendable, Equatable {
    public var groups: Int
    public var abandoned: Int
    public var autoEndSeconds: Double
    public var graceSeconds: Double
    /// Ended by their owner at the end of the run.
    public var endedByOwner = 0
    /// Not abandoned and still not ended when the run looked (its owner's end failed, say): not a finding.
    public var notEnded = 0
    /// Abandoned, but no member was ever on its channel (they never subscribed): nothing to time its end from.
    public var unjudged = 0
    /// Abandoned and ended by the backend in time.
    public var autoEnded = 0
    /// Abandoned and not ended by `auto_end` + grace after their last member left.
    public var autoEndLate = 0
    /// Abandoned and ended sooner than `auto_end` after their last member left.
    public var endedEarly = 0
    /// Not abandoned, yet ended by the backend (while a member was on it).
    public var endedWhileConnected = 0
    /// Abandoned groups: their last member leaving → the backend ending them, seconds.
    public var autoEndAfterSeconds: [Double] = []
    public var findings: [Finding] = []
    /// The groups' chat media (nil: none was sent).
    public var media: MediaReport?
    /// The groups' chat lines without media, accounted as media are (no bytes; nil: none was posted).
    public var messages: MediaReport?
    /// The after-action replay each owner read back right after ending its group (nil: the app keeps no archive).
    public var replay: ReplayReport?
    /// Direct messages between members, accounted as chat lines are (nil: none was sent).
    public var direct: MediaReport?

    public struct Finding: Codable, Sendable, Equatable {
        public var group: Int
        public var kind: String
        public var detail: String

        public init(group: Int, kind: String, detail: String) { (self.group, self.kind, self.detail) = (group, kind, detail) }
    }

    public init(groups: Int, abandoned: Int, autoEndSeconds: Double, graceSeconds: Double) {
        (self.groups, self.abandoned, self.autoEndSeconds, self.graceSeconds) = (groups, abandoned, autoEndSeconds, graceSeconds)
    }

    public var holds: Bool { autoEndLate == 0 && endedEarly == 0 && endedWhileConnected == 0 && replay?.holds != false }

    public var verdict: String {
        if holds {
            return abandoned == 0 ? "no group was left to auto-end; none was ended while someone was on it"
                : "every abandoned group ended within \(Self.s(autoEndSeconds)) + \(Self.s(graceSeconds)) after its last member left, none sooner; none was ended while someone was on it"
        }
        var parts: [String] = []
        if autoEndLate > 0 { parts.append("\(autoEndLate) abandoned group\(autoEndLate == 1 ? "" : "s") not ended by \(Self.s(autoEndSeconds + graceSeconds))") }
        if endedEarly > 0 { parts.append("\(endedEarly) ended sooner than \(Self.s(autoEndSeconds)) after the last member left") }
        if endedWhileConnected > 0 { parts.append("\(endedWhileConnected) ended by the backend while a member was on it") }
        if let replay, !replay.holds { parts.append(replay.verdict) }
        return parts.joined(separator: "; ")
    }

    public mutating func record(_ finding: Finding) { if findings.count < 20 { findings.append(finding) } }

    static func s(_ seconds: Double) -> String { String(format: seconds >= 10 ? "%.0f s" : "%.1f s", seconds) }

    enum CodingKeys: String, CodingKey {
        case groups, abandoned, findings, media, messages, replay, direct
        case autoEndSeconds = "auto_end_s"
        case graceSeconds = "grace_s"
        case endedByOwner = "ended_by_owner"
        case notEnded = "not_ended"
        case unjudged
        case autoEnded = "auto_ended"
        case autoEndLate = "auto_end_late"
        case endedEarly = "ended_early"
        case endedWhileConnected = "ended_while_connected"
        case autoEndAfterSeconds = "auto_end_after_s"
    }
}

extension GroupsReport {
    /// One group's end as the backend recorded it. `lastLeft`: when its last member left (abandoned groups), wall seconds.
    public mutating func add(group: Int, abandoned: Bool, ended: Bool, byBackend: Bool, endedAt: Double?, lastLeft: Double?) {
        if !abandoned {
            if ended && byBackend {
                endedWhileConnected += 1
                record(Finding(group: group, kind: "ended_while_connected", detail: "the backend ended it while members were on it"))
            } else if ended {
                endedByOwner += 1
            } else {
                notEnded += 1
            }
            return
        }
        guard let lastLeft else {
            unjudged += 1
            record(Finding(group: group, kind: "unjudged", detail: "no member was ever on its channel (devices_never_subscribed)"))
            return
        }
        guard ended, byBackend, let endedAt else {
            autoEndLate += 1
            record(Finding(group: group, kind: "auto_end_late", detail: ended ? "ended by its owner, not the backend" : "still not ended"))
            return
        }
        let after = endedAt - lastLeft
        autoEndAfterSeconds.append(after)
        // A second either side for the two clocks' stamps (the backend's ended_at, the phone's leaving).
        if after < autoEndSeconds - 1 {
            endedEarly += 1
            record(Finding(group: group, kind: "ended_early", detail: String(format: "ended %.1f s after its last member left", after)))
        } else if after > autoEndSeconds + graceSeconds {
            autoEndLate += 1
            record(Finding(group: group, kind: "auto_end_late", detail: String(format: "ended %.1f s after its last member left", after)))
        } else {
            autoEnded += 1
        }
    }
}

/// The after-action replay check (Survale §8): each group its owner ended, read back by the owner right after —
/// every position its members archived and every chat line they posted must come back. A group nobody ended
/// (abandoned to the backend) is not read back: not tested, never passed.
public struct ReplayReport: Codable, Sendable, Equatable {
    /// Groups read back right after their owner ended them.
    public var groups = 0
    /// Of them, every archived position and every chat line came back.
    public var complete = 0
    /// Fewer came back than the members stored (a finding each).
    public var short = 0
    /// The read back failed (its reason is under "Why requests failed").
    public var failed = 0
    /// Groups not read back: abandoned to the backend's auto-end, or their owner's end failed.
    public var notTested = 0
    public var positionsExpected = 0
    public var positionsReturned = 0
    public var messagesExpected = 0
    public var messagesReturned = 0
    /// Of the positions returned, those with a heading (a moving phone's).
    public var withHeading = 0

    public init() {}

    public var holds: Bool { short == 0 && failed == 0 }

    public var verdict: String {
        if groups == 0 { return "replay not tested: no group that stored anything was ended by its owner in this run" }
        if holds {
            var out = "replay complete: \(complete) of \(groups) groups read back whole after their end (\(positionsReturned) positions, "
                + "\(withHeading) with a heading; \(messagesReturned) chat lines)"
            if positionsExpected == 0 { out += "; no position was archived yet, so positions were not tested" }
            if messagesExpected == 0 { out += "; no chat line was posted, so the chat was not tested" }
            return out + (notTested > 0 ? "; \(notTested) not read back (abandoned, or nothing stored)" : "")
        }
        var parts: [String] = []
        if short > 0 { parts.append("replay short for \(short) of \(groups) groups (\(positionsReturned) of \(positionsExpected) positions, \(messagesReturned) of \(messagesExpected) chat lines)") }
        if failed > 0 { parts.append("replay failed for \(failed) of \(groups) groups") }
        return parts.joined(separator: "; ")
    }

    enum CodingKeys: String, CodingKey {
        case groups, complete, short, failed
        case notTested = "not_tested"
        case positionsExpected = "positions_expected"
        case positionsReturned = "positions_returned"
        case messagesExpected = "messages_expected"
        case messagesReturned = "messages_returned"
        case withHeading = "with_heading"
    }
}
