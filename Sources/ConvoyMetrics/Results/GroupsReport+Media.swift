import Foundation

/// A group app's chat media (summary.json's `groups.media`; Survale's photos
/// and videos in operation chat): what the phones posted and gave up, and for
/// each member online when a post was made, whether it downloaded it or why
/// not, so that `expected = delivered + lost`.
public struct MediaReport: Codable, Sendable, Equatable {
    /// Posted: uploaded, and its chat line inserted.
    public var sent = 0
    /// Given up by the sender, by reason (`http_403`, `retry_limit`, `retry_expired`, `group_ended`, `left`, …).
    public var failed: [String: Int] = [:]
    /// Attempts made again after a failure.
    public var retried = 0
    /// Downloads expected: the members online when each was posted.
    public var expected = 0
    /// Of those, downloaded whole by the member.
    public var delivered = 0
    /// Of those, not, by reason (`not_received`: its chat line never reached the member; `download_<reason>`, `bad_size`).
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
        case bytesUp = "bytes_up"
        case bytesDown = "bytes_down"
    }

    /// One line for summary.md and report.html.
    public var line: String {
        var out = "\(sent) posted (\(Self.megabytes(bytesUp)) up, \(Self.megabytes(bytesDown)) down), \(failedTotal) given up"
        if !failed.isEmpty { out += " (\(Self.reasons(failed)))" }
        out += ", \(retried) retried; \(expected) downloads expected: \(delivered) delivered, \(lostTotal) lost"
        if !lost.isEmpty { out += " (\(Self.reasons(lost)))" }
        return out
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
    static func reasons(_ r: [String: Int]) -> String { r.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
}
