import Synchronization

/// Each group's sends and receipts as they happen, for the live view's per-group figures (`Tick.groups`):
/// a location app's updates (`sent` counts one per friend expected, as the `sent` counter does), a mailbox
/// app's messages. Groups are contiguous ranges of device indices, in the scenario's order.
public final class GroupTally: Sendable {
    /// The first device index of each group, and one past the last of the last.
    private let bounds: [Int]
    /// Sent and received, two per group.
    private let counts: Mutex<[Int]>

    /// `sizes`: each group's device count, in order.
    public init(sizes: [Int]) {
        var bounds = [0]
        for s in sizes { bounds.append(bounds[bounds.count - 1] + max(s, 0)) }
        self.bounds = bounds
        counts = Mutex(Array(repeating: 0, count: 2 * max(sizes.count, 1)))
    }

    /// The group `device` belongs to (the last one for an index beyond them, which a test's context may use).
    public func group(of device: Int) -> Int {
        var low = 0, high = bounds.count - 2
        guard high > 0 else { return 0 }
        while low < high {
            let mid = (low + high + 1) / 2
            if bounds[mid] <= device { low = mid } else { high = mid - 1 }
        }
        return low
    }

    /// The device indices of group `g`.
    public func devices(of g: Int) -> Range<Int> { bounds[g]..<bounds[g + 1] }

    public var groups: Int { bounds.count - 1 }

    func sent(by device: Int, _ n: Int = 1) {
        guard n > 0 else { return }
        let g = group(of: device)
        counts.withLock { $0[2 * g] += n }
    }

    func received(by device: Int) {
        let g = group(of: device)
        counts.withLock { $0[2 * g + 1] += 1 }
    }

    /// Each group's sent and received so far.
    public func totals() -> [(sent: Int, received: Int)] {
        counts.withLock { c in (0..<(c.count / 2)).map { (c[2 * $0], c[2 * $0 + 1]) } }
    }
}
