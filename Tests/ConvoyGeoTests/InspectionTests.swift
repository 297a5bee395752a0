import Foundation
import Testing
@testable import ConvoyGeo

@Suite struct InspectionTests {
    @Test func reportsSpeedsGapsAndBounds() throws {
        // 21 points, 1 s apart at 2 m/s, then one 60 s gap with 30 m moved.
        let o = GeoPoint(lat: 10, lon: 20)
        var times = (0...20).map(Double.init)
        var points = (0...20).map { o.offset(north: Double($0) * 2, east: 0) }
        times.append(80)
        points.append(points.last!.offset(north: 0, east: 30))
        let track = try TimedTrack(name: "t", times: times, points: points)
        let i = TrackInspection(ImportedTrack(track: track, report: ImportReport(), kind: "track"))
        #expect(i.points == 22)
        #expect(i.duration == 80)
        #expect(abs(i.distance - 70) < 0.01)
        #expect(abs(i.speed.median - 2) < 0.001)
        #expect(abs(i.speed.max - 2) < 0.001, "the gap's 0.5 m/s is below the others")
        #expect(i.gaps.medianInterval == 1)
        #expect(i.gaps.threshold == 5)
        #expect(i.gaps.count == 1)
        #expect(i.gaps.longest == 60)
        #expect(abs(i.bounds.maxLat - points[20].lat) < 1e-12 && i.bounds.minLon == 20)
    }

    @Test func quantilesUseNearestRank() {
        #expect(TrackInspection.quantile([], 0.5) == 0)
        #expect(TrackInspection.quantile([5], 0.95) == 5)
        #expect(TrackInspection.quantile(Array(1...100).map(Double.init), 0.95) == 95)
        #expect(TrackInspection.quantile([3, 1, 2], 0.5) == 2)
    }
}
