import ConvoyCrypto
import Synchronization

/// What this process's phones sealed for whom and when, for an app whose
/// payload carries no sequence number or send time (Green Box's `payload:
/// prd`). The sender records each plaintext as sealed; the recipient finds
/// it by what it decrypted — sender, recipient, latitude, longitude, `ts`
/// and accuracy, exactly — and takes the sequence number and the intended
/// send time (nanoseconds) from it, so end-to-end latency keeps the richer
/// payload's resolution. Two updates of one pair alike in all of those (same
/// fuzzed position and accuracy within the same second) are told apart by
/// which the recipient already has. Entries older than `horizon` (the
/// retention limit: later, a receipt is lost anyway) are dropped as new ones come.
public final class SentUpdates: Sendable {
    struct Key: Hashable {
        var sender: Int32
        var recipient: Int32
        var lat: Double
        var lon: Double
        var ts: Double
        var acc: Double

        init(sender: Int32, recipient: Int32, _ p: LocationPayload) {
            (self.sender, self.recipient, lat, lon, ts, acc) = (sender, recipient, p.lat, p.lon, p.ts, p.acc)
        }
    }

    public struct Sent: Sendable, Equatable {
        public var seq: UInt64
        public var sentNanos: Int64
    }

    private struct State {
        var byKey: [Key: [Sent]] = [:]
        /// In the order recorded, for pruning; `head` is the oldest still kept.
        var order: [(key: Key, sentNanos: Int64)] = []
        var head = 0
    }

    private let state = Mutex(State())
    private let horizonNanos: Int64

    /// `horizon`: how long an entry is kept, seconds.
    public init(horizon: Double) { horizonNanos = Int64(max(horizon, 1) * 1e9) }

    /// `sender` sealed `plaintext` for `recipient` as update `seq`, meant to be sent at `sentNanos`.
    public func record(sender: Int, recipient: Int, _ plaintext: LocationPayload, seq: UInt64, sentNanos: Int64) {
        let key = Key(sender: Int32(sender), recipient: Int32(recipient), plaintext)
        state.withLock { s in
            s.byKey[key, default: []].append(Sent(seq: seq, sentNanos: sentNanos))
            s.order.append((key, sentNanos))
            Self.prune(&s, before: sentNanos - horizonNanos)
        }
    }

    /// What `sender` sealed as `plaintext` for `recipient`: the first such update
    /// the recipient does not have yet (`has`), else the first (a duplicate); nil: none.
    public func find(sender: Int, recipient: Int, _ plaintext: LocationPayload, has: (UInt64) -> Bool) -> Sent? {
        let key = Key(sender: Int32(sender), recipient: Int32(recipient), plaintext)
        let candidates = state.withLock { $0.byKey[key] } ?? []
        return candidates.first { !has($0.seq) } ?? candidates.first
    }

    /// Entries kept (for tests and the harness's own cost).
    public var count: Int { state.withLock { $0.order.count - $0.head } }

    private static func prune(_ s: inout State, before cutoff: Int64) {
        while s.head < s.order.count, s.order[s.head].sentNanos < cutoff {
            let (key, nanos) = s.order[s.head]
            if var list = s.byKey[key] {
                if let i = list.firstIndex(where: { $0.sentNanos == nanos }) { list.remove(at: i) }
                s.byKey[key] = list.isEmpty ? nil : list
            }
            s.head += 1
        }
        if s.head > 4096, s.head * 2 > s.order.count {
            s.order.removeFirst(s.head)
            s.head = 0
        }
    }
}
