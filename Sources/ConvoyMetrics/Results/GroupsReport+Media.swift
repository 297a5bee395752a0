import Foundation

/// Chat media: a photo or a short video (a group's phones send each kind at its own cadence and size; the report counts
/// them together).
public enum MediaKind: String, Sendable, Equatable, CaseIterable {
    case photo, video

    public var contentType: String {
        switch self {
        case .photo: "image/jpeg"
        case .video: "video/mp4"
        }
    }
}


/// A group app's chat media (summary.json's `groups.media`; Survale's photos
/// and videos in operation chat), or its text lines (`groups.messages`, no
/// bytes): what the phones posted and gave up, and for each member in the
/// group when a post was made (on its network or not), whether it got it, live
/// or loaded after a gap, or why not, so that `expected = delivered + lost`.
public struct MediaReport: Codable, Sendable, Equatable {
    /// Posted: uploaded, and its chat line inserted.
    public var sent = 0
    /// Given up by the sender, by reason (`http_403`, `retry_limit`, `retry_expired`, `group_ended`, `left`, …).
    public var failed: [String: Int] = [:]
    /// Attempts made again after a failure.
    public var retried = 0
    /// Downloads (or receipts) expected: the members in the group when each was posted.
    public var expected = 0
    /// Of those, downloaded whole (a line: heard) by the member.
    public var delivered = 0
    /// Of the delivered, loaded after a gap (the member was off its network when it was posted).
    public var caughtUp = 0
    /// Of those, not, by reason (`never_back`: the member was still away, or never finished loading, when its run ended;
    /// `not_received`: it was back and the line never reached it; `download_<reason>`, `bad_size`).
    public var lost: [String: Int] = [:]
    /// Downloads by members not online when it was posted (not in `expected`).
    public var unexpected = 0
    public var bytesUp = 0
    public var bytesDown = 0

    public init() {}

    public var lostTotal: Int { lost.values.reduce(0, +) }
    public var failedTotal: Int { failed.values.reduce(0, +) }
    /// Every expected download is delivered or lost with a reason.
    public var closes: Bool { expected == delivered + lostTotal }

    enum CodingKeys: String, CodingKey {
        case sent, failed, retried, expected, delivered, lost, unexpected
        case caughtUp = "caught_up"
        case bytesUp = "bytes_up"
        case bytesDown = "bytes_down"
    }

    /// One line for summary.md and report.html.
    public var line: String { line(expecting: "downloads") }

    /// One line, `noun` what each member should have of a post (`downloads`, `receipts`).
    public func line(expecting noun: String) -> String {
        var out = "\(sent) posted"
        if bytesUp + bytesDown > 0 { out += " (\(Self.megabytes(bytesUp)) up, \(Self.megabytes(bytesDown)) down)" }
        out += ", \(failedTotal) given up"
        if !failed.isEmpty { out += " (\(Self.reasons(failed)))" }
        out += ", \(retried) retried; \(expected) \(noun) expected: \(delivered) delivered"
        if caughtUp > 0 { out += " (\(caughtUp) after a gap)" }
        out += ", \(lostTotal) lost"
        if !lost.isEmpty { out += " (\(Self.reasons(lost)))" }
        return out
    }

    /// Direct messages (`GroupsReport.direct`) in one line: expected, delivered, lost by reason.
    public var directLine: String {
        "Direct messages: \(expected) sent to a partner online, \(delivered) delivered, \(lostTotal) lost"
            + (lost.isEmpty ? "" : " (\(Self.reasons(lost)))")
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
    static func reasons(_ r: [String: Int]) -> String { r.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
}

extension MediaReport {
    /// A summary.json written before `caught_up` existed reads as none caught up.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        (sent, failed, retried) = (try c.decode(Int.self, forKey: .sent), try c.decode([String: Int].self, forKey: .failed), try c.decode(Int.self, forKey: .retried))
        (expected, delivered, lost) = (try c.decode(Int.self, forKey: .expected), try c.decode(Int.self, forKey: .delivered), try c.decode([String: Int].self, forKey: .lost))
        caughtUp = try c.decodeIfPresent(Int.self, forKey: .caughtUp) ?? 0
        unexpected = try c.decode(Int.self, forKey: .unexpected)
        (bytesUp, bytesDown) = (try c.decode(Int.self, forKey: .bytesUp), try c.decode(Int.self, forKey: .bytesDown))
    }
}
