import ConvoyFleet
import ConvoyMetrics
import ConvoyServer
import ConvoyWire
import Foundation
import Logging

/// The steps of `convoy run` before and after the fleet runs: the scenario with its flags, the shard and run id,
/// the files it reads, the results folder, the backend, and the results written.
extension Convoy.Run {
    /// The scenario file with the flags over it; a live run's group must be in it. Bad input: exit 2.
    func loadScenario() throws -> Scenario {
        var scenario: Scenario
        do {
            scenario = try ScenarioFile.load(self.scenario)
        } catch {
            throw CommandFailure.badInput(error.description)
        }
        try applyOverrides(&scenario)
        if let live = LiveRun.setup, !scenario.groups.contains(where: { $0.name == live.group }) {
            throw CommandFailure.badInput("\(self.scenario): no group \"\(live.group)\" for the live devices (add one, or name one with --live-group)")
        }
        return scenario
    }

    /// This process's shard of the fleet (`--shard I/N`; nil: all of it) and the run's id (derived for shards, so
    /// that every shard names the same run).
    func shardAndRunID(_ scenario: Scenario, start: Double?) throws -> (Shard?, String) {
        guard let text = self.shard, let (index, count) = Shard.parse(text) else {
            return (nil, self.runID ?? String(UInt64.random(in: 0...UInt64.max), radix: 36))
        }
        let runID = self.runID ?? Shard.derivedRunID(seed: scenario.seed, scenario: scenario.name, devices: scenario.deviceCount, startAt: start)
        let secret = Shard.secret(runID: runID)
        let shard = Shard(index: index, count: count, devices: scenario.deviceCount, seed: scenario.seed, startAt: start, secret: secret.bytes)
        if count > 1, case .embedded = resolvedTarget(scenario.target) {
            throw CommandFailure.badInput("--shard \(text): the shards need one backend; `embedded` would give each its own (give --target or --keys-file)")
        }
        guard scenario.deviceCount >= count else {
            throw CommandFailure.badInput("--shard \(text): \(scenario.deviceCount) devices cannot fill \(count) shards")
        }
        if secret.derived { FileHandle.standardError.write(Data("convoy: note: passwords derived from the run id (set CONVOY_SHARD_SECRET for anything but throwaway accounts)\n".utf8)) }
        return (shard, runID)
    }

    /// The files a run reads besides the scenario: tracks, battery profiles, a probe catalogue. A bad one is bad
    /// input, found before anything starts.
    func readInputs(_ scenario: Scenario, runID: String) throws -> (tracks: TrackLibrary, batteryProfiles: BatteryProfiles, catalogue: ProbeCatalogue?) {
        let placeholder = SupabaseTarget(url: "http://127.0.0.1", anonKey: "")
        do {
            let check = FleetRun.Configuration(scenario: scenario, scenarioFile: self.scenario, target: placeholder, runID: runID, drain: drain.seconds)
            return (try FleetRun.tracks(for: check), try FleetRun.batteryProfiles(for: check), try FleetRun.probeCatalogue(for: check))
        } catch {
            throw CommandFailure.badInput(error.description)
        }
    }

    /// The results folder (`--out`, or one named after the scenario and the time); a roster an earlier run left in it
    /// is removed, so that it cannot pass for this run's.
    func openFolder(_ scenario: Scenario, shard: Shard?) throws -> ResultsFolder {
        let folder: ResultsFolder
        do {
            let name = ResultsFolder.defaultName(scenario: scenario.name) + (shard.map { "-shard\($0.index + 1)of\($0.count)" } ?? "")
            folder = try ResultsFolder(path: out ?? "results/" + name, columns: RunProgress.columns)
        } catch {
            throw CommandFailure.runtime(error.description)
        }
        if !keepRoster { try? FileManager.default.removeItem(atPath: folder.path + "/roster.json") }
        return folder
    }

    /// The backend the run targets: the embedded one started here (stopped by the caller) on the run's `clock`, a project,
    /// or a keys file's.
    func startBackend(_ scenario: Scenario, clock: RunClock, logger: Logger) async throws -> (EmbeddedServer?, SupabaseTarget, kind: String) {
        switch resolvedTarget(scenario.target) {
        case .embedded:
            if let declared = scenario.app.declared, declared.serves == nil, declared.sqlFolder == nil {
                throw CommandFailure.badInput("\(declared.file): the embedded backend serves no tables of \(declared.name) (backend: {embedded: …} or {sql: FOLDER}); "
                                              + "give the scenario a target, or --target/--keys-file")
            }
            let embedded: EmbeddedServer
            do {
                embedded = try await EmbeddedServer.start(Self.embeddedConfiguration(scenario), clock: clock, logger: logger)
            } catch {
                throw CommandFailure.runtime("cannot start the embedded backend: \(error)")
            }
            return (embedded, SupabaseTarget(url: embedded.keys.url, anonKey: embedded.keys.anonKey, serviceKey: embedded.keys.serviceRoleKey), "embedded")
        case .project(let url, let anon, let service):
            return (nil, SupabaseTarget(url: url, anonKey: anon, serviceKey: service), "project")
        case .keysFile(let path):
            return (nil, try Self.readKeys(path, relativeTo: self.scenario), "keys_file")
        }
    }

    /// Every results file, through the folder: the roster (0600, when asked for), a shard's ledger, the fleet map,
    /// the summary and metrics; then the reports drawn from them (failing to draw them does not change the verdict).
    func writeResults(_ outcome: FleetRun.Outcome, summary: RunSummary, map: FleetMapData?, target: SupabaseTarget, to folder: ResultsFolder,
                      logger: Logger) throws {
        do {
            if keepRoster { try folder.writePrivate("roster.json", try Roster.json(outcome.accounts, target: target.url)) }
            if let ledger = outcome.ledger { try folder.write("ledger.json", try ledger.json()) }
            // The fleet map for report.html: where each phone last was, the tracked phones' tracks and what their friends got.
            if let map, let json = try? JSONEncoder().encode(map) { try folder.write("map.json", json) }
            try folder.finish(summary: summary, metrics: outcome.metrics)
        } catch {
            throw CommandFailure.runtime("\(error)")
        }
        do {
            try folder.writeReports()
        } catch {
            logger.error("report.html / junit.xml: \(error)")
            FileHandle.standardError.write(Data("convoy: warning: \(error) (convoy report \(folder.path) draws them again)\n".utf8))
        }
    }
}
