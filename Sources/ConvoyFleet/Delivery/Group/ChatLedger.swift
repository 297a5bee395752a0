import Synchronization

/// Who should have each of a group app's chat lines, or photos and videos, and who did (Survale's operation
/// chat): the sender records the members in the group when the line was posted (on their network or not:
/// the chat is stored, and a member off its network loads it when it comes back), each member what became
/// of it, in either order, live or loaded after a gap. Closed at the end, every one expected is delivered or
/// lost with a reason: `never_back` when the member was still owed the chat since a gap that began before
/// the post (it never came back, or never finished loading), `not_received` otherwise (it was back and the
/// line still never reached it); and, for media, `download_<reason>` or `bad_size`.
public final class ChatLedger: Sendable {
    private struct Key: Hashable {
        var sender: Int
        var seq: UInt64
    }

    private enum Outcome {
        case delivered(caughtUp: Bool)
        case failed(String)

        var isDelivered: Bool { if case .delivered = self { true } else { false } }
    }

    private struct Post {
        var members: [Int]
        /// When it was posted, wall clock.
        var at: Double
    }

    private struct State {
        var posts: [Key: Post] = [:]
        var outcomes: [Key: [Int: Outcome]] = [:]
        /// Members gone still owed the chat, since when (wall clock, the catch-up's lookback included).
        var neverBack: [Int: Double] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// `sender`'s line `seq` was posted at `at` (wall clock) while `members` were in the group.
    func posted(sender: Int, seq: UInt64, members: [Int], at: Double) {
        state.withLock { $0.posts[Key(sender: sender, seq: seq)] = Post(members: members, at: at) }
    }

    /// `member` has it (a line heard, media downloaded whole); `caughtUp`: loaded after a gap, not heard live.
    func delivered(sender: Int, seq: UInt64, by member: Int, caughtUp: Bool) {
        state.withLock { $0.outcomes[Key(sender: sender, seq: seq), default: [:]][member] = .delivered(caughtUp: caughtUp) }
    }

    /// `member` could not have it (`reason`: a download that failed); one it already has stays delivered.
    func failed(sender: Int, seq: UInt64, by member: Int, reason: String) {
        state.withLock { s in
            let key = Key(sender: sender, seq: seq)
            if s.outcomes[key]?[member]?.isDelivered == true { return }
            s.outcomes[key, default: [:]][member] = .failed(reason)
        }
    }

    /// `member` left the run still owed the chat since `since` (wall clock).
    func neverBack(_ member: Int, since: Double) {
        state.withLock { $0.neverBack[member] = since }
    }

    /// The accounting at the end: `expected = delivered + lost`.
    struct Closed: Equatable {
        var expected = 0
        var delivered = 0
        /// Of the delivered, loaded after a gap.
        var caughtUp = 0
        var lost: [String: Int] = [:]
        /// Delivered to members not expected (not in the group when it was posted, or its post never seen to succeed).
        var unexpected = 0
    }

    func close() -> Closed {
        state.withLock { s in
            var c = Closed()
            for (key, post) in s.posts {
                let outcomes = s.outcomes[key] ?? [:]
                c.expected += post.members.count
                for m in post.members {
                    switch outcomes[m] {
                    case .delivered(let caughtUp):
                        c.delivered += 1
                        if caughtUp { c.caughtUp += 1 }
                    case .failed(let reason): c.lost[reason, default: 0] += 1
                    case nil:
                        let reason = s.neverBack[m].map { post.at >= $0 } == true ? "never_back" : "not_received"
                        c.lost[reason, default: 0] += 1
                    }
                }
                c.unexpected += outcomes.filter { !post.members.contains($0.key) && $0.value.isDelivered }.count
            }
            // Deliveries of lines whose post the sender never saw succeed (its answer lost): not expected either.
            // A failed download by a member not expected is neither delivered nor owed: not counted.
            for (key, outcomes) in s.outcomes where s.posts[key] == nil { c.unexpected += outcomes.values.filter(\.isDelivered).count }
            return c
        }
    }
}
