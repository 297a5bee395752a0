import Testing
@testable import ConvoyFleet

/// A phone's last ticks are decided by their intended times, not by whether the leave's job reached the phone
/// first: the scheduler starts each job in a task of its own, so two that come due together (a busy machine)
/// may run in either order, and a sharded run and a single process must share the same ticks.
@Suite struct LifecycleTests {
    static func arrived(at t: Double, leavingAt leave: Double?) -> Lifecycle {
        var life = Lifecycle()
        if let leave { life.plan(leaveAt: leave) }
        let arrived = life.arrive(at: t)
        #expect(arrived)
        return life
    }

    @Test func aTickDueBeforeTheLeaveIsSharedWhenItRunsAfterIt() {
        var life = Self.arrived(at: 1, leavingAt: 10)
        let left = life.leave(at: 10)
        #expect(left)
        #expect(life.sharing(at: 9.99) == 1, "came due before the leave")
        #expect(life.sharing(at: 10) == nil && life.sharing(at: 12) == nil)
        #expect(life.onlineSince == nil, "left: not online, whatever it still shares")
    }

    @Test func aTickDueAfterThePlannedLeaveIsNotSharedWhenItRunsFirst() {
        let life = Self.arrived(at: 1, leavingAt: 10)
        #expect(life.sharing(at: 9) == 1)
        #expect(life.sharing(at: 10.5) == nil, "due after the leave that has not run yet")
        #expect(life.onlineSince == 1)
    }

    @Test func aLeaveWithoutATimeStopsEverything() {
        var life = Self.arrived(at: 1, leavingAt: nil)
        #expect(life.sharing(at: 1e9) == 1, "no leave planned")
        let left = life.leave()
        #expect(left)
        #expect(life.sharing(at: 2) == nil)
        var planned = Self.arrived(at: 1, leavingAt: 10)
        let plannedLeft = planned.leave(at: 20)
        #expect(plannedLeft)
        #expect(planned.sharing(at: 12) == nil, "a later leave does not extend the planned one")
    }

    @Test func nothingIsSharedBeforeArrivingOrAfterDisconnecting() {
        var life = Lifecycle()
        life.plan(leaveAt: 10)
        #expect(life.sharing(at: 5) == nil)
        let arrived = life.arrive(at: 1)
        #expect(arrived)
        life.disconnect()
        #expect(life.sharing(at: 5) == nil)
        var early = Lifecycle()
        let leftEarly = early.leave(at: 10), arrivedLate = early.arrive(at: 1)
        #expect(!leftEarly && !arrivedLate, "left before arriving")
        #expect(early.sharing(at: 5) == nil)
    }
}
