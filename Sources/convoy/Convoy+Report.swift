import ArgumentParser
import ConvoyMetrics
import Foundation

extension Convoy {
    /// `convoy report DIR`: draws report.html and junit.xml again from a results folder.
    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Draw report.html and junit.xml again from a results folder.",
            discussion: """
                Reads DIR's summary.json, metrics.csv and histograms.json (what `convoy run` wrote) and writes \
                DIR/report.html (self-contained: inline SVG, nothing fetched) and DIR/junit.xml. Exits with the \
                run's own verdict: 0 if it passed, 99 if a threshold failed, a probe leaked or retention broke, 1 if it was interrupted.
                """)

        @Argument(help: "A results folder (results/<UTC>-<scenario>/).")
        var folder: String

        @Flag(name: .customLong("exit-zero"), help: "Exit 0 whatever the run's verdict (only drawing the report).")
        var exitZero = false

        func run() async throws {
            let input: ReportInput
            do {
                input = try ReportInput.load(folder: folder)
            } catch {
                throw CommandFailure.badInput(error.description)
            }
            do {
                try ResultsFolder.writeReports(input, in: folder)
            } catch {
                throw CommandFailure.runtime(error.description)
            }
            print("\((folder as NSString).appendingPathComponent("report.html"))")
            print("\((folder as NSString).appendingPathComponent("junit.xml"))")
            let s = input.summary
            guard !exitZero, s.exitCode != 0 else { return }
            throw CommandFailure(status: ExitStatus(rawValue: s.exitCode) ?? .runtimeFailure,
                                 message: "\(s.scenario): \(s.complete ? "failed" : "interrupted") (exit \(s.exitCode) when it ran)")
        }
    }
}
