import ConvoyFleet
import ConvoyMetrics
import Synchronization
import Testing

/// A clock that moves only when the test says; sleepers wake when it passes their deadline.
final class ManualClock: SchedulerClock {
    private struct Sleeper { var deadline: Double; var continuation: CheckedContinuation<Void, any Error> }
    private let state = Mutex<(now: Double, sleepers: [UInt64: Sleeper], next: UInt64)>((0, [:], 0))

    func now() -> Double { state.withLock { $0.now } }

    func advance(to t: Double) {
        let wake = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.now = t
            let due = s.sleepers.filter { $0.value.deadline <= t }
            for k in due.keys { s.sleepers[k] = nil }
            return due.values.map(\.continuation)
        }
        for c in wake { c.resume() }
    }

    func sleep(until deadline: Double) async throws {
        let id = state.withLock { s -> UInt64 in
            s.next += 1
            return s.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let now = state.withLock { s -> Result<Void, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if s.now >= deadline { return .success(()) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: c)
                    return nil
                }
                if let now { c.resume(with: now) }
            }
        } onCancel: {
            let c = state.withLock { $0.sleepers.removeValue(forKey: id) }
            c?.continuation.resume(throwing: CancellationError())
        }
    }
}

/// What the jobs did, in order.
final class Log: Sendable {
    private let entries = Mutex<[String]>([])
    func add(_ s: String) { entries.withLock { $0.append(s) } }
    var all: [String] { entries.withLock { $0 } }

    /// Waits (yielding) until `n` entries are in.
    func wait(for n: Int) async {
        while entries.withLock({ $0.count }) < n { await Task.yield() }
    }
}

@Suite struct SchedulerTests {
    @Test func jobsStartAtTheirTimeAndKnowIt() async {
        let clock = ManualClock(), log = Log(), metrics = Metrics()
        let scheduler = Scheduler(clock: clock, metrics: metrics)
        for (name, t) in [("c", 3.0), ("a", 1.0), ("b", 2.0)] {
            scheduler.at(t) { intended in log.add("\(name)@\(intended) started \(clock.now())") }
        }
        let running = Task { await scheduler.run() }
        clock.advance(to: 1)
        await log.wait(for: 1)
        #expect(log.all == ["a@1.0 started 1.0"])
        clock.advance(to: 2.5)  // b runs half a second late: lag 0.5 s
        await log.wait(for: 2)
        clock.advance(to: 3)
        await log.wait(for: 3)
        #expect(log.all == ["a@1.0 started 1.0", "b@2.0 started 2.5", "c@3.0 started 3.0"])
        let lag = metrics.snapshot()
        #expect(lag.statistic("scheduler_lag", "count") == 3)
        #expect(abs((lag.statistic("scheduler_lag", "max") ?? 0) - 500_000) <= 500, "the late start is recorded, in µs")
        running.cancel()
    }

    @Test func anEarlierJobWakesTheScheduler() async {
        let clock = ManualClock(), log = Log()
        let scheduler = Scheduler(clock: clock)
        scheduler.at(100) { _ in log.add("late") }
        let running = Task { await scheduler.run() }
        while scheduler.pending != 1 { await Task.yield() }
        scheduler.at(5) { _ in log.add("early") }
        clock.advance(to: 5)
        await log.wait(for: 1)
        #expect(log.all == ["early"] && scheduler.pending == 1)
        clock.advance(to: 100)
        await log.wait(for: 2)
        #expect(log.all == ["early", "late"])
        running.cancel()
    }

    /// The open model: a job that never finishes does not hold back the next one.
    @Test func aSlowJobDoesNotDelayOthers() async {
        let clock = ManualClock(), log = Log()
        let scheduler = Scheduler(clock: clock)
        scheduler.at(1) { _ in
            log.add("slow started")
            try? await clock.sleep(until: 1_000)
        }
        scheduler.at(2) { _ in log.add("next") }
        let running = Task { await scheduler.run() }
        clock.advance(to: 2)
        await log.wait(for: 2)
        #expect(Set(log.all) == ["slow started", "next"])
        running.cancel()
    }
}
