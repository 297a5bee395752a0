import Foundation
import Testing

/// `convoy battery` as a user runs it: the what-if table with no server.
@Suite struct BatteryCommandTests {
    /// mAh/h per row of `--format csv`.
    static func rates(_ csv: String) -> [String: Double] {
        var out: [String: Double] = [:]
        for line in csv.split(separator: "\n").dropFirst() {
            let cells = line.split(separator: ",", omittingEmptySubsequences: false)
            if cells.count >= 6, let v = Double(cells[5]) { out[String(cells[0])] = v }
        }
        return out
    }

    @Test func theTableShowsTheTailFlatteningAndWhatBatchingAndTheBackgroundSave() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let svg = dir.appendingPathComponent("battery.svg").path
        let r = try CLI.run("battery", "--format", "csv", "--svg", svg)
        #expect(r.status == 0, "\(r.stderr)")
        let rate = Self.rates(r.stdout)
        let every3 = try #require(rate["every 3 s"]), every10 = try #require(rate["every 10 s"]), every60 = try #require(rate["every 1 min"])
        let batched = try #require(rate["4 fixes / 1 min"]), background = try #require(rate["background"])
        // Within LTE's 11.6 s tail the radio never sleeps: 3 s costs what 10 s does (to 1 %).
        #expect(abs(every3 - every10) / every10 < 0.01, "\(rate)")
        #expect(every60 < every10 && batched < every10 && background < every60 / 5, "\(rate)")
        let chart = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(chart.hasPrefix("<svg") && chart.contains("every 1 min") && chart.contains("radio"))

        // With nobody else waking the radio, uploads alone: slower than the tail is cheaper.
        let alone = Self.rates(try CLI.run("battery", "--format", "csv", "--friends", "0", "--heartbeat", "0").stdout)
        #expect(try #require(alone["every 30 s"]) < (try #require(alone["every 10 s"])) * 0.7, "\(alone)")
    }

    @Test func badInputExitsTwo() throws {
        #expect(try CLI.run("battery", "--network", "5g").status == 2)
        #expect(try CLI.run("battery", "--capacity", "-1").status == 2)
    }
}
