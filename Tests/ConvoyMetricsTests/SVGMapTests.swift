import ConvoyMetrics
import Foundation
import Testing

/// report.html's fleet map: one marker per phone with a position (clustered past 1,500), tracks, what friends
/// received, a scale bar; drawn without a script or a tile.
@Suite struct SVGMapTests {
    static func map(phones n: Int) -> FleetMapData {
        let phones = (0..<n).map { (i: Int) -> FleetMapData.Phone in
            let lat: Double? = i == 3 ? nil : 46.0 + Double(i % 50) * 1e-3
            let lon: Double = 14.5 + Double(i / 50) * 1e-3
            return FleetMapData.Phone(i: i, g: i % 2, lat: lat, lon: lon, online: false, state: .gps)
        }
        let track = (0..<20).map { (k: Int) -> FleetMapData.Fix in
            let state: FleetMapData.FixState = k == 5 ? .noFix : k == 9 ? .offline : .gps
            let lat: Double = 46 + Double(k) * 1e-4
            return FleetMapData.Fix(t: Double(k), lat: lat, lon: 14.5, state: state)
        }
        let received = [FleetMapData.Receipt(t: 3, by: 1, lat: 46.0, lon: 14.5, acc: 800, latencyMs: 12.5, mode: "general:2"),
                        FleetMapData.Receipt(t: 4, by: 2, lat: 46.0004, lon: 14.5001, acc: 9, latencyMs: 8, mode: "precise")]
        return FleetMapData(groups: ["walkers", "drivers"], phones: phones, tracked: [.init(i: 0, g: 0, track: track, received: received)],
                            sampling: "every phone's track is drawn")
    }

    static func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    @Test func onePhoneOneMarkerWithItsFriendsInTheTooltip() {
        let svg = SVGMap.render(Self.map(phones: 40))
        #expect(Self.count("<circle class=\"phone\"", in: svg) == 39, "phone 3 had no position")
        #expect(svg.contains("friend 1 (general:2): last update ±800 m, 12.5 ms") && svg.contains("friend 2 (precise): last update ±9 m, 8 ms"))
        #expect(Self.count("class=\"general-cell\"", in: svg) == 1 && Self.count("class=\"received\"", in: svg) == 2)
        #expect(svg.contains("class=\"fix-no_fix\"") && svg.contains("class=\"fix-offline\"") && svg.contains("class=\"track\""))
        #expect(svg.contains("class=\"scale-bar\"") && (svg.contains(" m</text>") || svg.contains(" km</text>")))
        #expect(!svg.contains("<script") && !svg.contains("<image"), "offline: nothing fetched")
    }

    @Test func thousandsOfPhonesAreClusteredAndEveryOneIsCounted() throws {
        let svg = SVGMap.render(Self.map(phones: 2000))
        #expect(Self.count("<circle class=\"phone\"", in: svg) == 0)
        let counts = try NSRegularExpression(pattern: #"class="cluster" data-count="(\d+)""#).matches(in: svg, range: NSRange(svg.startIndex..., in: svg))
            .map { Int((svg as NSString).substring(with: $0.range(at: 1)))! }
        #expect(counts.reduce(0, +) == 1999 && counts.count < 1999)
    }

    @Test func aReportWithAMapHasItsSectionAndOneWithoutHasNone() throws {
        let summary = RunSummary(scenario: "m", scenarioFile: "m.yaml", seed: 1, complete: true, startedAt: Date(), endedAt: Date(), durationSeconds: 1,
                                 target: .init(kind: "embedded", url: "http://x"), devices: 40, accounting: Accounting(),
                                 metrics: MetricsSnapshot(), thresholds: []) { _ in 0 }
        #expect(HTMLReport.render(ReportInput(summary: summary, series: [], histograms: nil, map: Self.map(phones: 40))).contains("<h2>Fleet map</h2>"))
        #expect(!HTMLReport.render(ReportInput(summary: summary, series: [], histograms: nil)).contains("Fleet map"))
    }
}
