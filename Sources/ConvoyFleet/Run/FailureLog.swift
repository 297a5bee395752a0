import ConvoyMetrics
import ConvoyWire
import Logging
import Synchronization

/// Why the fleet's requests failed: a count per operation and reason, and the first request with the server's
/// answer, logged (run.log) the first time each pair is seen and written into the summary, so that a phase
/// that did nothing says why (a 400 on every pairing request names the column the server refused); and the last of
/// each, for the live dashboard (`latest`).
public final class FailureLog: Sendable {
    private struct Key: Hashable { let operation: String, reason: String }
    private struct Entry { var count: Int, first: FailureSample, last: FailureSample, noted: Int }
    private let entries = Mutex<(order: [Key], byKey: [Key: Entry], noted: Int)>(([], [:], 0))
    private let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// Counts `error` for `operation` (`pairing_request`, `share` …); the first of its kind is logged as a warning.
    public func note(_ operation: String, _ error: any Error) {
        let (reason, request, answer) = Self.describe(error)
        let key = Key(operation: operation, reason: reason)
        let sample = FailureSample(operation: operation, reason: reason, count: 1, request: request, answer: answer)
        let first = entries.withLock { state -> Bool in
            state.noted += 1
            if state.byKey[key] != nil {
                state.byKey[key]!.count += 1
                (state.byKey[key]!.last, state.byKey[key]!.noted) = (sample, state.noted)
                return false
            }
            state.order.append(key)
            state.byKey[key] = Entry(count: 1, first: sample, last: sample, noted: state.noted)
            return true
        }
        if first {
            logger.warning("\(operation) failed (first of its kind; later ones are counted in the summary): \(request.map { "\($0) → " } ?? "")\(answer)")
        }
    }

    /// Every operation and reason seen, in the order first seen; nil when nothing failed.
    public var samples: [FailureSample]? {
        entries.withLock { state in
            guard !state.order.isEmpty else { return nil }
            return state.order.map { key in
                var sample = state.byKey[key]!.first
                sample.count = state.byKey[key]!.count
                return sample
            }
        }
    }

    /// Every operation and reason seen, with its count and its last request and answer, the one noted last at the end.
    public var latest: [FailureSample] {
        entries.withLock { state in
            state.byKey.values.sorted { $0.noted < $1.noted }.map { e in
                var sample = e.last
                sample.count = e.count
                return sample
            }
        }
    }

    static func describe(_ error: any Error) -> (reason: String, request: String?, answer: String) {
        guard let e = error as? SupabaseError else { return ("error", nil, String(describing: error).prefix(300).description) }
        let reason: String = switch e.kind {
        case .http(let status, _): "http_\(status)"
        case .wire(let kind): "\(kind)"
        case .unexpectedResponse: "unexpected_response"
        case .notJoined: "not_joined"
        }
        return (reason, e.request, String(e.description.prefix(300)))
    }
}
