import ConvoyFleet
import ConvoyTime
import Foundation
import Synchronization
import Testing

/// The run's wall time is fixed to its monotonic clock at the start, so a step of the machine's wall clock during
/// a run (an NTP correction on a fresh CI machine) moves neither the fleet's times nor, since `convoy run` hands the
/// embedded backend the same clock, what the backend stamps and purges by. A CI run once judged three groups'
/// data "deleted early" 2.4 s after their end that the backend, on the machine's stepped clock, had purged after 10 s.
@Suite struct RunClockTests {
    /// A machine clock whose wall time can be stepped without its monotonic time moving.
    final class SteppingClock: ConvoyClock {
        let base = ManualClock(wallStart: 1_800_000_000)
        let step = Mutex(0.0)
        func now() -> Double { base.now() }
        func wallNow() -> Double { base.wallNow() + step.withLock { $0 } }
        func sleep(until deadline: Double) async throws { try await base.sleep(until: deadline) }
    }

    @Test func aWallClockStepDuringTheRunMovesNotTheRunsWallTime() {
        let machine = SteppingClock()
        machine.base.advance(to: 5)
        let run = RunClock(machine)
        #expect(run.wallNow() == 1_800_000_005)
        machine.base.advance(to: 30)
        machine.step.withLock { $0 = 8 }  // the machine's clock jumps 8 s ahead
        #expect(run.wallNow() == 1_800_000_030, "the run's times go on from where they were")
        #expect(run.date == Date(timeIntervalSince1970: 1_800_000_030), "and so does what a backend on it stamps")
        // The control: the machine's own wall time did jump.
        #expect(machine.wallNow() == 1_800_000_038)
    }
}
