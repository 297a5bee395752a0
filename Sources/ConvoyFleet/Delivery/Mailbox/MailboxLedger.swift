import Synchronization

/// Every direct message of a mailbox app (QuickPic) and what became of it: the sender records each it posted
/// (the backend's id and time), the recipient each it fetched, opened and acknowledged, and every poll it
/// made. Closed at the end, each message posted is delivered or lost with a reason, and two checks of the
/// backend fall out: a message fetched again after its acknowledgement succeeded (`after_ack`: the backend
/// did not delete it), and one whose acknowledgement found it gone (`ack_gone`).
public final class MailboxLedger: Sendable {
    struct Key: Hashable {
        var sender: Int
        var seq: UInt64
    }

    private struct Post {
        var recipient: Int
        var id: String
        /// The backend's time (Unix seconds), or the sender's when the answer had none.
        var storedAt: Double
    }

    private struct State {
        var posts: [Key: Post] = [:]
        var byID: [String: Key] = [:]
        var delivered: Set<Key> = []
        /// Fetched and refused by its recipient (a signature or content that did not check out), by reason.
        var rejected: [Key: String] = [:]
        /// Per recipient, messages posted and neither delivered nor refused.
        var owed: [Int: Int] = [:]
        var acked: Set<String> = []
        var afterAck: Set<String> = []
        var ackGone: Set<String> = []
        /// Each recipient's successful polls, in order.
        var polls: [Int: [Poll]] = [:]
        /// Recipients that never poll (`poll_every: never`): what is sent to them waits for the fallback purge.
        var parked: Set<Int> = []
        /// Messages that wait for their recipient's answer before they can be read (Closer's mutual reveal), by id,
        /// until their sender lets go of them.
        var held: Set<String> = []
    }

    /// A successful poll: when it began (wall clock), and whether it read what a held listener had been pushed
    /// rather than the backend itself.
    private struct Poll {
        var at: Double
        var throughListener: Bool

        /// Whether it proves lost a message stored at `storedAt` that it did not bring: a poll over HTTP a second
        /// after, a look at a listener's pushed state `listenerAllowance` after.
        func proves(storedAt: Double) -> Bool { at > storedAt + (throughListener ? MailboxLedger.listenerAllowance : 1) }
    }

    private let state = Mutex(State())

    public init() {}

    func parked(_ recipient: Int) { state.withLock { _ = $0.parked.insert(recipient) } }

    /// `sender`'s message `seq` to `recipient` was stored as `id` at `storedAt`.
    func posted(sender: Int, seq: UInt64, to recipient: Int, id: String, storedAt: Double, held: Bool = false) {
        state.withLock { s in
            let key = Key(sender: sender, seq: seq)
            s.posts[key] = Post(recipient: recipient, id: id, storedAt: storedAt)
            s.byID[id] = key
            // Held, it is owed to nobody until its sender lets go of it.
            if held, !s.delivered.contains(key) {
                s.held.insert(id)
                return
            }
            // Its recipient may have polled it before the sender read the answer.
            if !s.delivered.contains(key), s.rejected[key] == nil { s.owed[recipient, default: 0] += 1 }
        }
    }

    /// How long after a message is stored a look at a held listener's pushed state proves it lost: the push of a
    /// write can come seconds after it on a loaded backend (or harness), and the look reads only what has come. A
    /// look over HTTP proves it after a second.
    static let listenerAllowance = 5.0

    /// A poll of `recipient`'s that succeeded, begun at `at` (wall clock); `throughListener`: it read what a held
    /// listener had been pushed, not the backend itself.
    func polled(_ recipient: Int, at: Double, throughListener: Bool = false) {
        state.withLock { $0.polls[recipient, default: []].append(Poll(at: at, throughListener: throughListener)) }
    }

    /// `recipient` fetched message `id`: false when its acknowledgement had already succeeded (the violation, counted once).
    func fetched(_ id: String) -> Bool {
        state.withLock { s in
            guard s.acked.contains(id) else { return true }
            s.afterAck.insert(id)
            return false
        }
    }

    /// Shown to its recipient (opened and decoded).
    func delivered(sender: Int, seq: UInt64) {
        state.withLock { s in
            let key = Key(sender: sender, seq: seq)
            guard s.delivered.insert(key).inserted, s.rejected[key] == nil, let post = s.posts[key] else { return }
            // Read before its sender's poll reported the release: it was never owed.
            if s.held.remove(post.id) != nil { return }
            s.owed[post.recipient, default: 0] -= 1
        }
    }

    /// Fetched and refused by its recipient (message `id`, from `sender` when the recipient knows whose `seq` it was).
    func rejected(id: String, reason: String) {
        state.withLock { s in
            guard let key = s.byID[id], s.rejected[key] == nil, !s.delivered.contains(key) else { return }
            s.rejected[key] = reason
            if let post = s.posts[key] { s.owed[post.recipient, default: 0] -= 1 }
        }
    }

    func acked(_ id: String) { state.withLock { _ = $0.acked.insert(id) } }

    /// Its sender let go of held message `id` (Closer: the partner had answered, the answer's key was released).
    /// Its recipient could read it from `at` (wall clock) on: what "polled in time" counts from.
    func released(_ id: String, at: Double) {
        state.withLock { s in
            guard s.held.remove(id) != nil, let key = s.byID[id], let post = s.posts[key], !s.delivered.contains(key) else { return }
            s.posts[key]?.storedAt = at
            s.owed[post.recipient, default: 0] += 1
        }
    }

    func ackFoundGone(_ id: String) { state.withLock { _ = $0.ackGone.insert(id) } }

    /// Messages posted to `recipient` and not delivered yet (what a settling phone still waits for).
    func owed(to recipient: Int) -> Int { state.withLock { $0.owed[recipient] ?? 0 } }

    /// What the fallback purge check judges for `recipient`: each message posted to it, its key as a number
    /// (for the retention report), its id and when it was stored.
    func posted(to recipient: Int) -> [(key: Int64, id: String, storedAt: Double)] {
        state.withLock { s in
            s.posts.filter { $0.value.recipient == recipient }.map { (Self.number($0.key), $0.value.id, $0.value.storedAt) }
        }
    }

    /// The retention report's number for message `id` (sender << 32 | seq); nil when it is not one of the run's.
    func number(of id: String) -> Int64? { state.withLock { $0.byID[id].map(Self.number) } }

    static func number(_ key: Key) -> Int64 { Int64(key.sender) << 32 | Int64(key.seq & 0xFFFF_FFFF) }

    /// The accounting at the end: `sent = delivered + lost + held`, with the backend's two checks.
    public struct Closed: Equatable, Sendable {
        public var sent = 0
        public var delivered = 0
        public var lost: [String: Int] = [:]
        public var afterAck = 0
        public var ackGone = 0
        /// Held at the end, waiting for the recipient's own answer: neither delivered nor lost.
        public var held = 0
    }

    /// Closes the books. An undelivered message is lost `parked` when its recipient never polls (the fallback purge
    /// is its end); `purged_unfetched` when the recipient's first poll after it came later than `purgeLimit` (window
    /// + purge interval + grace: the purge took it, as the policy says); `not_fetched` when the recipient polled in
    /// time and never got it (the backend's fault: a poll over a second after it was stored, or a look at a listener's
    /// pushed state `listenerAllowance` after); `not_polled_since` when the recipient never polled after it was stored.
    func close(purgeLimit: Double?) -> Closed {
        state.withLock { s in
            var c = Closed()
            for (key, post) in s.posts {
                c.sent += 1
                if s.delivered.contains(key) {
                    c.delivered += 1
                    continue
                }
                if s.held.contains(post.id), s.rejected[key] == nil {
                    c.held += 1
                    continue
                }
                let reason: String
                if let why = s.rejected[key] {
                    reason = "rejected_" + why
                } else if s.parked.contains(post.recipient) {
                    reason = "parked"
                } else if let next = (s.polls[post.recipient] ?? []).first(where: { $0.proves(storedAt: post.storedAt) }) {
                    reason = purgeLimit.map { next.at > post.storedAt + $0 } == true ? "purged_unfetched" : "not_fetched"
                } else {
                    reason = "not_polled_since"
                }
                c.lost[reason, default: 0] += 1
            }
            c.afterAck = s.afterAck.count
            c.ackGone = s.ackGone.count
            return c
        }
    }
}
