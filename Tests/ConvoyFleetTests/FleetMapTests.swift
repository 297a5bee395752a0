@testable import ConvoyFleet
import ConvoyGeo
import ConvoyMetrics
import Testing

/// The fleet's map: every phone's newest true position, a spread sample of tracked phones, what friends received
/// (with how each is shared to), bounded whatever the run's length; and each group's tally.
@Suite struct FleetMapTests {
    @Test func trackedPhonesAreSpreadOverEveryGroupAndTheRestStillHavePositions() {
        let map = FleetMap(groups: ["a", "b"], sizes: [90, 10], tracking: 10)
        #expect(map.tracked == Set(stride(from: 0, to: 100, by: 10)) && map.tracked.contains(90), "group b has its share")
        for i in 0..<100 { map.moved(i, at: 1, to: GeoPoint(lat: 46 + Double(i) * 1e-4, lon: 14.5), state: .gps) }
        map.moved(7, at: 2, to: nil, state: .noFix)
        let data = map.snapshot(online: (0..<100).map { $0 < 50 })
        #expect(data.phones.count == 100 && data.phones.allSatisfy { $0.lat != nil } && data.phones.filter(\.online).count == 50)
        #expect(data.phones[7].state == .noFix && data.phones[7].lat != nil, "no fix: the last position stays, its state says why")
        #expect(data.phones[95].g == 1 && data.phones[89].g == 0)
        #expect(data.tracked.count == 10 && data.tracked.allSatisfy { $0.track.count == 1 })
        #expect(map.sampling.contains("10 of 100 phones"))
        // The legend's sentence is whole (it ended "every phone's position is" on the page, in report.html and the README).
        #expect(map.sampling.hasSuffix("every phone's position is marked"), "\(map.sampling)")
    }

    @Test func aTrackKeepsItsNewestFixesOnly() {
        let map = FleetMap(groups: ["a"], sizes: [1])
        for t in 0..<(FleetMap.trackLength + 50) {
            map.moved(0, at: Double(t), to: GeoPoint(lat: 46, lon: 14 + Double(t) * 1e-5), state: t % 2 == 0 ? .gps : .reduced)
        }
        let track = map.snapshot(online: [true]).tracked[0].track
        #expect(track.count == FleetMap.trackLength && track.first?.t == 50 && track.last?.t == Double(FleetMap.trackLength + 49))
        #expect(zip(track, track.dropFirst()).allSatisfy { $0.t < $1.t }, "oldest first")
        // The live map asks for the newest few only.
        let recent = map.snapshot(online: [true], recent: 10).tracked[0].track
        #expect(recent.map(\.t) == Array(track.suffix(10)).map(\.t))
    }

    @Test func aPhonesDetailListsItsFriendsWithTheirModeAndLastUpdatesNewestFirst() throws {
        let map = FleetMap(groups: ["a"], sizes: [4], tracking: 1)
        map.moved(0, at: 0, to: GeoPoint(lat: 46.05, lon: 14.5), state: .gps)
        map.shares(0, with: 1, as: .precise)
        map.shares(0, with: 2, as: .general(decimals: 2))
        for k in 0..<5 { map.received(by: 2, from: 0, sent: Double(k), lat: 46.05, lon: 14.5, acc: 800, latency: 0.01 * Double(k + 1)) }
        map.received(by: 1, from: 0, sent: 9, lat: 46.0501, lon: 14.5002, acc: 8, latency: nil)
        let detail = try #require(map.detail(0, online: true))
        #expect(detail.friends.map(\.i) == [1, 2] && detail.friends.map(\.mode) == ["precise", "general:2"])
        let general = detail.friends[1].last
        #expect(general.count == FleetMap.lastKept && general.map(\.t) == [4, 3, 2] && general.allSatisfy { $0.mode == "general:2" })
        #expect(abs((general[0].latencyMs ?? 0) - 50) < 1e-9 && detail.friends[0].last.first?.latencyMs == nil)
        #expect(detail.track?.count == 1, "phone 0 is tracked")
        #expect(map.detail(4, online: false) == nil && map.detail(-1, online: false) == nil)
        // A tracked phone keeps every receipt for the map (bounded), with the mode it was sent in.
        let tracked = map.snapshot(online: [true, true, true, true]).tracked[0]
        #expect(tracked.received.count == 6 && tracked.received.filter { $0.mode == "general:2" }.count == 5)
    }

    @Test func groupsTallyTheirOwnSendsAndReceipts() {
        let tally = GroupTally(sizes: [3, 0, 2])
        #expect((0..<5).map(tally.group(of:)) == [0, 0, 0, 2, 2] && tally.devices(of: 2) == 3..<5)
        tally.sent(by: 4, 3)
        tally.sent(by: 0)
        tally.received(by: 1)
        tally.sent(by: 2, 0)
        #expect(tally.totals().map(\.sent) == [1, 0, 3] && tally.totals().map(\.received) == [1, 0, 0])
    }
}
