import Synchronization

/// Who should have downloaded each photo or video, and who did (group apps'
/// chat media): the sender records the members online when its chat line was
/// posted, each member what became of its download, in either order; closed at
/// the end, every expected download is delivered or lost with a reason
/// (`not_received`: its line never reached the member).
public final class MediaLedger: Sendable {
    private struct Key: Hashable {
        var sender: Int
        var seq: UInt64
    }

    private enum Outcome {
        case downloaded
        case failed(String)
    }

    private struct State {
        var expected: [Key: [Int]] = [:]
        var outcomes: [Key: [Int: Outcome]] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// `sender`'s media `seq` was posted while `members` were online.
    func posted(sender: Int, seq: UInt64, members: [Int]) {
        state.withLock { $0.expected[Key(sender: sender, seq: seq)] = members }
    }

    /// `member` downloaded `sender`'s media `seq` whole.
    func downloaded(sender: Int, seq: UInt64, by member: Int) {
        state.withLock { $0.outcomes[Key(sender: sender, seq: seq), default: [:]][member] = .downloaded }
    }

    /// `member` could not download it (`reason`).
    func failed(sender: Int, seq: UInt64, by member: Int, reason: String) {
        state.withLock { $0.outcomes[Key(sender: sender, seq: seq), default: [:]][member] = .failed(reason) }
    }

    /// Expected downloads, those delivered, those lost by reason, and downloads nobody expected.
    func close() -> (expected: Int, delivered: Int, lost: [String: Int], unexpected: Int) {
        state.withLock { s in
            var (expected, delivered, unexpected, lost) = (0, 0, 0, [String: Int]())
            for (key, members) in s.expected {
                let outcomes = s.outcomes[key] ?? [:]
                expected += members.count
                for m in members {
                    switch outcomes[m] {
                    case .downloaded: delivered += 1
                    case .failed(let reason): lost[reason, default: 0] += 1
                    case nil: lost["not_received", default: 0] += 1
                    }
                }
                unexpected += outcomes.keys.filter { !members.contains($0) }.count
            }
            // Downloads of media whose post the sender never saw succeed (its answer lost): not expected either.
            for (key, outcomes) in s.outcomes where s.expected[key] == nil { unexpected += outcomes.count }
            return (expected, delivered, lost, unexpected)
        }
    }
}
