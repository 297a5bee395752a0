@testable import ConvoyFleet
import Testing

/// What a Survale phone keeps of its teammates: the last position and a 10-minute trail.
@Suite struct TeamMapTests {
    @Test func aTrailKeepsTheLastTenMinutesOldestFirst() {
        var map = TeamMap()
        let t0 = 1_764_000_000.0
        // One position every 4 s for 30 minutes.
        for k in 0..<450 { map.add(7, lat: 52 + Double(k) * 1e-4, lon: 13, ts: t0 + Double(k) * 4) }
        let trail = map.trail(of: 7)
        let newest = t0 + 449 * 4
        #expect(trail.count == 151, "600 s at 4 s, both ends kept")
        #expect(abs(trail.first!.ts - (newest - 600)) < 0.01 && abs(trail.last!.ts - newest) < 0.01)
        #expect(zip(trail, trail.dropFirst()).allSatisfy { $0.ts < $1.ts })
        #expect(abs(trail.last!.lat - (52 + 449e-4)) < 1e-5, "positions to about a metre")
        #expect(map.lastSeen(7).map { abs($0 - newest) < 0.01 } == true)
        #expect(map.trails[7]!.points.count < 450, "what fell out of the window is dropped")
    }

    @Test func anOlderPositionDoesNotMoveTheMapBack() {
        var map = TeamMap()
        map.add(1, lat: 1, lon: 1, ts: 100)
        map.add(1, lat: 2, lon: 2, ts: 90)
        map.add(2, lat: 3, lon: 3, ts: 95)
        #expect(map.trail(of: 1).map(\.lat) == [1] && map.lastSeen(1) == 100)
        #expect(map.lastSeen(2) == 95 && map.lastSeen(3) == nil && map.trail(of: 3).isEmpty)
    }
}
