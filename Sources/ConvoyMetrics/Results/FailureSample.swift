/// Why requests failed during a run, one entry per operation and reason: how many, and the first
/// request and the server's answer, so that a phase that did nothing says why (summary.json's
/// `failures`, the summary's "Why requests failed", run.log's first warning of each).
public struct FailureSample: Codable, Sendable, Equatable {
    /// What the phone was doing: `pairing_request`, `pairing_accept`, `share`, `set_up` …
    public var operation: String
    /// `http_400`, `transport`, `timeout` …
    public var reason: String
    public var count: Int
    /// The first such request, as method and path (its query left out: no secret is in a path).
    public var request: String?
    /// The server's answer to it: status, code and message.
    public var answer: String

    public init(operation: String, reason: String, count: Int, request: String?, answer: String) {
        (self.operation, self.reason, self.count, self.request, self.answer) = (operation, reason, count, request, answer)
    }
}
