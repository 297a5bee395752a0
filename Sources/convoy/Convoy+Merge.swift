import ArgumentParser
import ConvoyFleet
import ConvoyMetrics
import Foundation

extension Convoy {
    /// `convoy merge DIR… --out DIR`: one run's result from its shards' folders.
    struct Merge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Merge the results of a sharded run (convoy run --shard I/N) into one.",
            discussion: """
                Each DIR is one shard's results folder (summary.json, histograms.json, ledger.json, metrics.csv). \
                They must be every shard of one run, each once. Histograms add losslessly, counters sum, the \
                battery model, retention checks and probes sum; the delivery accounting is reconciled again \
                from the shards' ledgers (a sender and its friend may have run on different shards); the \
                scenario's thresholds are evaluated on the merged result. --out gets summary.json, summary.md, \
                histograms.json, latency-*.hgrm, metrics.csv (per second: counts summed, each latency column \
                the worst shard's), report.html and junit.xml. docs/distributed.md.

                Exit codes: 0 passed, 99 a threshold failed (or a probe leaked, or retention broke), \
                2 bad input (not shards of one run, a shard missing or twice), 1 runtime failure or a shard interrupted.
                """)

        @Argument(help: "The shards' results folders.")
        var folders: [String]

        @Option(help: ArgumentHelp("Where the merged results go.", valueName: "dir"))
        var out: String

        @Flag(name: .customLong("exit-zero"), help: "Exit 0 whatever the merged verdict (only merging).")
        var exitZero = false

        func validate() throws {
            if folders.isEmpty { throw ValidationError("give the shards' results folders") }
            let target = URL(fileURLWithPath: out).standardizedFileURL.path
            if folders.contains(where: { URL(fileURLWithPath: $0).standardizedFileURL.path == target }) {
                throw ValidationError("--out must not be one of the shards' folders")
            }
        }

        func run() async throws {
            let s = try Self.merge(folders, into: out)
            print(s.markdown())
            print("Results: \(out)")
            guard !exitZero, s.exitCode != 0 else { return }
            throw CommandFailure(status: ExitStatus(rawValue: s.exitCode) ?? .runtimeFailure,
                                 message: !s.complete ? "a shard was interrupted: the merged summary is marked incomplete"
                                     : (s.correctnessFailures + (s.thresholds.allSatisfy(\.passed) ? [] : ["thresholds failed"])).joined(separator: "; "))
        }

        /// The shards' `folders` checked as one run's, merged, and written into `out` (every file above); the merged
        /// summary. A folder that is not a shard of the run is bad input (`CommandFailure.badInput`).
        static func merge(_ folders: [String], into out: String) throws -> RunSummary {
            var parts: [ResultsMerge.Part] = []
            var ledgers: [ShardLedger] = []
            do {
                for folder in folders {
                    let input = try ReportInput.load(folder: folder)
                    parts.append(try ResultsMerge.Part(folder: folder, input: input))
                    let ledger = try ShardLedger.load((folder as NSString).appendingPathComponent("ledger.json"))
                    guard ledger.runID == parts.last!.shard.runID, ledger.shard == parts.last!.shard.shard else {
                        throw ResultsMerge.Failure(description: "\(folder)/ledger.json: shard \(ledger.shard) of run \(ledger.runID), "
                                                   + "but its summary.json says shard \(parts.last!.shard.shard!) of run \(parts.last!.shard.runID)")
                    }
                    ledgers.append(ledger)
                }
                parts = try ResultsMerge.check(parts)
                if let (device, shards) = ShardLedger.overlap(ledgers) {
                    throw ResultsMerge.Failure(description: "device \(device) ran on shards \(shards[0]) and \(shards[1]): the shards split the fleet differently")
                }
                if let l = ledgers.first(where: { $0.fleet != parts[0].shard.fleetDevices || $0.shards != parts[0].shard.shards }) {
                    throw ResultsMerge.Failure(description: "ledger.json of shard \(l.shard): \(l.fleet) devices in \(l.shards) shards, but summary.json says otherwise")
                }
            } catch let error as ReportInput.Failure {
                throw CommandFailure.badInput(error.description)
            } catch let error as ResultsMerge.Failure {
                throw CommandFailure.badInput(error.description)
            } catch let error as ShardLedger.Failure {
                throw CommandFailure.badInput(error.description)
            }
            let (accounting, battery) = ShardLedger.reconcile(ledgers)
            let merged: (summary: RunSummary, metrics: MetricsSnapshot)
            do {
                merged = try ResultsMerge.merge(parts, accounting: accounting, batteryByDevice: battery) { complete, passed in
                    (complete ? (passed ? ExitStatus.ok : .thresholdsFailed) : .runtimeFailure).rawValue
                }
            } catch {
                throw CommandFailure.badInput(error.description)
            }
            let series = ResultsMerge.series(parts.map(\.folder))
            do {
                let folder = try ResultsFolder(path: out, columns: series?.header ?? RunProgress.columns)
                for row in series?.rows ?? [] { folder.append(row: row) }
                try folder.finish(summary: merged.summary, metrics: merged.metrics)
                try folder.writeReports()
            } catch {
                throw CommandFailure.runtime("\(error)")
            }
            return merged.summary
        }
    }
}
