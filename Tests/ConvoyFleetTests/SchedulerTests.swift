import ConvoyFleet
import ConvoyMetrics
import ConvoyTime
import ConvoyWire
import Synchronization
import Testing

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
