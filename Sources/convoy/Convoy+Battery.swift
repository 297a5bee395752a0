import ArgumentParser
import ConvoyFleet
import ConvoyMetrics
import Foundation

extension Convoy {
    struct Battery: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "battery",
            abstract: "What sharing costs a phone's battery: a what-if table by cadence, batched and background (no server).",
            discussion: """
                Each row drives the energy model (docs/battery.md) through an hour: GPS, uploads of \
                sealed rows to every friend, friends' updates over Realtime, heartbeats, crypto. \
                Below the radio's tail time (LTE 11.6 s) the radio never sleeps, so faster \
                cadences cost about the same; batching and the background let it sleep.
                """)

        enum Output: String, ExpressibleByArgument, CaseIterable { case text, markdown, csv }

        @Option(help: "Network profile: lte, 3g, wifi, or one from --profiles.")
        var network = "lte"

        @Option(help: "Battery capacity in mAh for % per hour (default: the profile's, 3000).")
        var capacity: Double?

        @Option(help: "A YAML file of profiles over the shipped ones (same shape as BatteryProfiles.yaml).")
        var profiles: String?

        @Option(help: "Friends sharing with the phone (uploads seal one row each; their updates arrive over Realtime).")
        var friends = 3

        @Option(help: "Realtime heartbeat interval in the foreground; 0 for none.")
        var heartbeat = DurationArgument(argument: "25s")!

        @Option(help: "Output: text (table and chart), markdown, csv.")
        var format: Output = .text

        @Option(help: "Also write the chart as a standalone SVG file (average mW by radio, GPS and CPU per row).")
        var svg: String?

        func run() throws {
            let all: BatteryProfiles
            do {
                all = try BatteryProfiles.load(overridingWith: profiles)
            } catch {
                throw CommandFailure.badInput(error.description)
            }
            guard let profile = all.profile(network) else {
                throw CommandFailure.badInput("--network \(network): no such profile; known: \(all.networkNames.joined(separator: ", "))")
            }
            if let capacity, !(capacity > 0 && capacity <= 1_000_000) {
                throw CommandFailure.badInput("--capacity \(capacity): expected mAh above 0, e.g. 3000")
            }
            guard (0...1000).contains(friends) else { throw CommandFailure.badInput("--friends \(friends): expected 0…1000") }
            guard heartbeat.seconds == 0 || (1...3600).contains(heartbeat.seconds) else {
                throw CommandFailure.badInput("--heartbeat \(heartbeat.text): expected 0 (none) or 1s…1h")
            }
            var assumptions = BatteryWhatIf.Assumptions()
            (assumptions.friends, assumptions.heartbeatInterval) = (friends, heartbeat.seconds)
            let capacityMAh = capacity ?? profile.battery.capacityMAh
            let rows = BatteryWhatIf.table(profile: profile, capacityMAh: capacityMAh, assumptions: assumptions)
            switch format {
            case .csv: print(Self.csv(rows), terminator: "")
            case .markdown: print(Self.markdown(rows))
            case .text:
                let tail = profile.radio.tail.reduce(0) { $0 + $1.seconds }
                print("""
                    \(network): \(String(format: "%.0f", capacityMAh)) mAh at \(profile.battery.voltage) V; \(friends) friends; \
                    heartbeat \(heartbeat.seconds > 0 ? Format.seconds(heartbeat.seconds) : "none"); radio tail \(String(format: "%.1f", tail)) s
                    """)
                print(Self.text(rows))
                print("\nmAh per hour")
                print(Self.chart(rows))
            }
            if let svg {
                let chart = SVGChart.stackedBars(rows.map { (label: $0.label, parts: [$0.radioMilliwatts, $0.gpsMilliwatts, $0.cpuMilliwatts]) },
                                                 components: ["radio", "GPS", "CPU"], unit: "average mW (\(network), \(friends) friends)")
                do {
                    try Data(chart.utf8).write(to: URL(fileURLWithPath: svg))
                } catch {
                    throw CommandFailure.runtime("cannot write \(svg): \(error.localizedDescription)")
                }
            }
        }

        static let columns = ["sharing", "radio mW", "GPS mW", "CPU mW", "mAh/h", "%/h", "tail %", "awake %"]

        static func cells(_ r: BatteryWhatIf.Row) -> [String] {
            [r.label, String(format: "%.1f", r.radioMilliwatts), String(format: "%.1f", r.gpsMilliwatts), String(format: "%.3f", r.cpuMilliwatts),
             String(format: "%.1f", r.mAhPerHour), String(format: "%.2f", r.percentPerHour), String(format: "%.0f", r.tailShare * 100),
             String(format: "%.0f", r.awakeShare * 100)]
        }

        static func text(_ rows: [BatteryWhatIf.Row]) -> String {
            let table = [columns] + rows.map(cells)
            let widths = columns.indices.map { i in table.map { $0[i].count }.max() ?? 0 }
            return table.map { line in
                line.enumerated().map { i, cell in
                    let pad = String(repeating: " ", count: widths[i] - cell.count)
                    return i == 0 ? cell + pad : pad + cell
                }.joined(separator: "  ")
            }.joined(separator: "\n")
        }

        static func markdown(_ rows: [BatteryWhatIf.Row]) -> String {
            (["| " + columns.joined(separator: " | ") + " |", "|---" + String(repeating: "|---:", count: columns.count - 1) + "|"]
                + rows.map { "| " + cells($0).joined(separator: " | ") + " |" }).joined(separator: "\n")
        }

        static func csv(_ rows: [BatteryWhatIf.Row]) -> String {
            let header = "sharing,upload_interval_s,radio_mw,gps_mw,cpu_mw,mah_per_hour,percent_per_hour,radio_tail_share,radio_awake_share\n"
            return header + rows.map { r in
                [r.label, "\(r.uploadInterval)", "\(r.radioMilliwatts)", "\(r.gpsMilliwatts)", "\(r.cpuMilliwatts)", "\(r.mAhPerHour)",
                 "\(r.percentPerHour)", "\(r.tailShare)", "\(r.awakeShare)"].joined(separator: ",") + "\n"
            }.joined()
        }

        /// A bar per row, scaled to the largest, split radio (█) / GPS (▒) / CPU (too small to see).
        static func chart(_ rows: [BatteryWhatIf.Row], width: Int = 50) -> String {
            let most = rows.map(\.mAhPerHour).max() ?? 1
            let label = rows.map(\.label.count).max() ?? 0
            return rows.map { r in
                let share = r.breakdown.total > 0 ? r.breakdown.radio.total / r.breakdown.total : 0
                let bar = most > 0 ? Int((r.mAhPerHour / most * Double(width)).rounded()) : 0
                let radio = Int((Double(bar) * share).rounded())
                return r.label.padding(toLength: label, withPad: " ", startingAt: 0) + " |"
                    + String(repeating: "█", count: radio) + String(repeating: "▒", count: bar - radio) + String(format: " %.1f", r.mAhPerHour)
            }.joined(separator: "\n") + "\n" + String(repeating: " ", count: label) + "  █ radio  ▒ GPS and CPU"
        }
    }
}
