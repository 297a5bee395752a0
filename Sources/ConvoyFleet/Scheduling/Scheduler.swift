import ConvoyMetrics
import ConvoyTime
import ConvoyWire
import Foundation
import Synchronization

/// Open-model scheduling for a whole fleet on one timer: every job has an
/// intended time and starts then, in a task of its own, however long earlier
/// jobs take (no thread per device, no device waiting on another). Each job
/// is told its intended time, so latencies are measured from it
/// (coordinated-omission-safe), and how late it actually started is recorded
/// as `scheduler_lag`.
public final class Scheduler: Sendable {
    /// A job, given its intended time.
    public typealias Job = @Sendable (_ intended: Double) async -> Void

    private struct Entry: Comparable {
        var time: Double
        var order: UInt64
        var job: Job
        static func < (a: Entry, b: Entry) -> Bool { (a.time, a.order) < (b.time, b.order) }
        static func == (a: Entry, b: Entry) -> Bool { a.time == b.time && a.order == b.order }
    }

    private struct State {
        var heap = Heap<Entry>()
        var order: UInt64 = 0
        /// Jobs running now, by number: a dictionary, so adding and removing one is O(1)
        /// however many a slow backend keeps waiting (a task group's child list is not).
        var running: [UInt64: Task<Void, Never>] = [:]
        var stopped = false
        /// The run loop's current wait, cancelled when an earlier job arrives.
        var sleeper: (until: Double, task: Task<Void, Never>)?
    }

    private let state = Mutex(State())
    public let clock: any ConvoyClock
    private let metrics: Metrics?

    public init(clock: any ConvoyClock = SystemClock(), metrics: Metrics? = nil) {
        self.clock = clock
        self.metrics = metrics
    }

    /// Runs `job` at `time` (seconds on `clock`); a time already past runs at once.
    public func at(_ time: Double, _ job: @escaping Job) {
        let wake = state.withLock { s -> Task<Void, Never>? in
            s.order += 1
            s.heap.insert(Entry(time: time, order: s.order, job: job))
            guard let sleeper = s.sleeper, time < sleeper.until else { return nil }
            s.sleeper = nil
            return sleeper.task
        }
        wake?.cancel()
    }

    /// Jobs waiting to start.
    public var pending: Int { state.withLock { $0.heap.count } }

    /// Jobs started and not yet finished.
    public var running: Int { state.withLock { $0.running.count } }

    /// Starts jobs as they come due, until cancelled; then cancels the running
    /// jobs and returns when they have finished.
    public func run() async {
        while !Task.isCancelled {
            let now = clock.now()
            let (due, next) = state.withLock { s -> ([Entry], Double?) in
                var due: [Entry] = []
                while let first = s.heap.min, first.time <= now { due.append(s.heap.popMin()!) }
                return (due, s.heap.min?.time)
            }
            for entry in due { start(entry) }
            if !due.isEmpty { continue }
            // Nothing due: wait for the next job, or until one earlier than it arrives.
            let until = next ?? .infinity
            let sleeper = Task { [clock] in _ = try? await clock.sleep(until: until) }
            let stale = state.withLock { s -> Bool in
                // A job that arrived between reading the heap and now is handled at once.
                if let first = s.heap.min?.time, first < until { return true }
                s.sleeper = (until, sleeper)
                return false
            }
            if stale { sleeper.cancel() }
            await withTaskCancellationHandler { await sleeper.value } onCancel: { sleeper.cancel() }
            state.withLock { s in if s.sleeper?.task == sleeper { s.sleeper = nil } }
        }
        let running = state.withLock { s -> [Task<Void, Never>] in
            s.stopped = true
            return Array(s.running.values)
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }

    /// Runs one job in a task of its own, registered while it runs.
    private func start(_ entry: Entry) {
        state.withLock { s in
            guard !s.stopped else { return }
            s.order += 1
            let id = s.order
            // Created under the lock, so its own removal (which takes the lock) comes after this insertion.
            s.running[id] = Task { [self] in
                metrics?.record(.schedulerLag, seconds: clock.now() - entry.time)
                await entry.job(entry.time)
                _ = state.withLock { $0.running.removeValue(forKey: id) }
            }
        }
    }
}

/// A binary min-heap.
struct Heap<Element: Comparable> {
    private var items: [Element] = []
    var count: Int { items.count }
    var min: Element? { items.first }

    mutating func insert(_ e: Element) {
        items.append(e)
        var i = items.count - 1
        while i > 0, items[i] < items[(i - 1) / 2] {
            items.swapAt(i, (i - 1) / 2)
            i = (i - 1) / 2
        }
    }

    mutating func popMin() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let out = items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count, items[l] < items[m] { m = l }
            if r < items.count, items[r] < items[m] { m = r }
            if m == i { return out }
            items.swapAt(i, m)
            i = m
        }
    }
}
