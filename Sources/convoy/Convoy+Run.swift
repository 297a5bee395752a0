import ArgumentParser
import ConvoyFleet
import ConvoyMetrics
import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Logging

/// What `convoy live` adds to a run: receivers feeding one group's devices.
struct LiveSetup: Sendable {
    var group: String
    var feeds: [LiveFeed]
}

/// `convoy live` runs `convoy run` with its receivers set here.
enum LiveRun {
    @TaskLocal static var setup: LiveSetup?
}

extension Convoy {
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run a scenario: a fleet of virtual phones of an app (Green Box, Survale, QuickPic, Closer, or one declared in a file) that onboard, pair, send and receive, measured.",
            discussion: """
                Devices sign up, publish their keys and pair as the scenario's social graph says; then they \
                arrive at the arrival rate, share sealed updates with each friend on their cadence, receive \
                their friends' over Realtime, and leave during the ramp-down. Receivers wait --drain for what \
                is in flight, then every update is accounted for: sent = delivered + lost (with a reason).

                The target is the scenario's unless given here: --target with --anon-key (and --service-key), \
                or --keys-file from `convoy serve --keys-file`. `embedded` starts convoy serve in this process \
                on a free loopback port with a temporary SQLite database.

                Results go to results/<UTC time>-<scenario>/ (or --out): summary.json, summary.md, \
                metrics.csv (a row a second, written as the run goes), latency-*.hgrm, histograms.json, run.log; \
                --keep-roster adds roster.json (0600: accounts and secret keys).

                Beyond one machine: --shard I/N runs the I-th of N parts of a seeded permutation of the fleet \
                the seed describes; friends on other shards still pair and share. Shards of one run share --start-at \
                (the first arrival, wall clock) and --run-id (derived from seed, scenario, devices and \
                --start-at when not given), and a backend (not `embedded`). Each shard also writes ledger.json; \
                `convoy merge` makes one result of them. CONVOY_SHARD_SECRET keys the accounts' passwords \
                (docs/distributed.md).

                Exit codes: 0 every threshold passed, 99 a threshold failed, 2 bad input (scenario, flags), \
                1 runtime failure or an interrupted run (SIGINT/SIGTERM stop gracefully: the devices stop, \
                what is in flight drains, the summary is written and marked incomplete).
                """)

        @Argument(help: "The scenario file (YAML; docs/scenarios.md).")
        var scenario: String

        @Option(help: ArgumentHelp("A Supabase project or convoy serve URL (with --anon-key).", valueName: "url"))
        var target: String?

        @Option(name: .customLong("anon-key"), help: "The target's anon key.")
        var anonKey: String?

        @Option(name: .customLong("service-key"), help: "The target's service_role key, for checks that need it (issue 5's retention and security probes); no device uses it.")
        var serviceKey: String?

        @Option(name: .customLong("keys-file"), help: "A convoy serve keys file: {url, anon_key, service_role_key}.")
        var keysFile: String?

        @Option(help: "Devices in all, split over the groups in their proportions; social.communities scales with them (a note says so).")
        var devices: Int?

        @Option(help: "Length of the steady part (e.g. 5m).")
        var duration: DurationArgument?

        @Option(help: "Seed for everything random (social graph, tracks, noise, jitter).")
        var seed: UInt64?

        @Option(help: ArgumentHelp("Results folder (default: results/<UTC time>-<scenario>).", valueName: "dir"))
        var out: String?

        @Option(help: "How long receivers wait for updates in flight after the last send.")
        var drain: DurationArgument = DurationArgument(argument: "5s")!

        @Flag(name: .customLong("keep-roster"), help: "Also write roster.json (0600): each device's account, tokens and key pair.")
        var keepRoster = false

        @Option(help: ArgumentHelp("How devices sign up: public (/auth/v1/signup, as the app does) or admin (the service key's admin API makes confirmed users, who sign in: for projects that confirm emails).", valueName: "public|admin"))
        var signup: SignUpMode = .public

        enum SignUpMode: String, ExpressibleByArgument, CaseIterable { case `public`, admin }

        @Flag(name: .customLong("pooled-connections"), help: "Share one HTTP pool (at most 256 connections) instead of one connection per device.")
        var pooledConnections = false

        @Option(name: .customLong("log-level"), help: "run.log's level: trace, debug, info, notice, warning, error.")
        var logLevel = "info"

        @Option(name: .customLong("metrics-listen"), help: ArgumentHelp(
            "Serve the run's metrics for Prometheus at http://HOST:PORT/metrics while it runs (a bare port: loopback only; :PORT: every interface).",
            valueName: "[host:]port"))
        var metricsListen: String?

        @Option(help: ArgumentHelp(
            "Serve a live dashboard of the run at [HOST:]PORT (a bare port: loopback only; :PORT: every interface; 0: a free port): phase, phones, traffic, latency, errors, groups, the app's counters and the thresholds, once a second; report.html from it when the run ends.",
            valueName: "[host:]port"))
        var dashboard: String?

        @Option(name: .customLong("dashboard-linger"), help: ArgumentHelp(
            "After the run, keep the dashboard up this long to look at (its final state, report.html); Ctrl-C ends it sooner. The exit code is the run's.",
            valueName: "duration"))
        var dashboardLinger: DurationArgument?

        @Flag(name: .customLong("dashboard-control"), help: ArgumentHelp(
            "Let the dashboard's page stop the run (as Ctrl-C does: the results are written and marked incomplete). The page has no login: a stop needs the token printed on standard error at start, in a link to the page."))
        var dashboardControl = false

        @Option(name: .customLong("map-tiles"), help: ArgumentHelp(
            "Raster tiles under the dashboard's fleet map: a URL template with {z}, {x} and {y} (Web Mercator, e.g. a tile server of your own); without it the map is drawn offline (a graticule and a scale bar).",
            valueName: "url-template"))
        var mapTiles: String?

        @Option(help: ArgumentHelp("Run part I of N of the fleet (1-based), e.g. 2/4.", valueName: "I/N"))
        var shard: String?

        @Option(name: .customLong("start-at"), help: ArgumentHelp(
            "When the first device arrives: RFC 3339 UTC (2026-11-21T02:00:00Z) or Unix seconds; set-up happens before it.", valueName: "time"))
        var startAt: String?

        @Option(name: .customLong("run-id"), help: "The run's id, the same on every shard (default: random; sharded: derived from the flags).")
        var runID: String?

        func validate() throws {
            if let shard, Shard.parse(shard) == nil { throw ValidationError("--shard is I/N with 1 ≤ I ≤ N ≤ \(Shard.most), e.g. 1/4") }
            if let startAt, Self.parseTime(startAt) == nil {
                throw ValidationError("--start-at is an RFC 3339 time (2026-11-21T02:00:00Z) or Unix seconds")
            }
            if let shard, let (_, n) = Shard.parse(shard), n > 1, startAt == nil {
                throw ValidationError("--shard \(shard) needs --start-at, so that the shards' timelines line up")
            }
            if shard != nil, startAt == nil, runID == nil {
                throw ValidationError("--shard needs --start-at or --run-id (the run id makes the accounts; a rerun needs a new one)")
            }
            if let runID, runID.isEmpty || runID.count > 40 || !runID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) {
                throw ValidationError("--run-id is 1–40 letters, digits or '-' (it goes into account emails)")
            }
            if let devices, !(1...1_000_000).contains(devices) { throw ValidationError("--devices must be 1…1,000,000") }
            if let duration, duration.seconds > Quantity.longest { throw ValidationError("--duration is at most 30 days") }
            if drain.seconds > 3600 { throw ValidationError("--drain is at most 1h") }
            if target != nil, anonKey == nil { throw ValidationError("--target needs --anon-key") }
            if let target, let problem = TargetURL.problem(target) { throw ValidationError(problem) }
            if anonKey != nil || serviceKey != nil, target == nil { throw ValidationError("--anon-key and --service-key go with --target") }
            if keysFile != nil, target != nil { throw ValidationError("give --keys-file or --target, not both") }
            if signup == .admin, serviceKey == nil, keysFile == nil {
                throw ValidationError("--signup admin needs the target's service key: --service-key, or a --keys-file with service_role_key")
            }
            guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level is trace, debug, info, notice, warning or error") }
            if let metricsListen, MetricsListener(metricsListen) == nil { throw ValidationError("--metrics-listen is [HOST:]PORT, e.g. 9464, 127.0.0.1:9464 or :9464") }
            if let dashboard, DashboardServer(dashboard) == nil { throw ValidationError("--dashboard is [HOST:]PORT, e.g. 8089, 127.0.0.1:8089 or :8089") }
            if dashboardLinger != nil, dashboard == nil { throw ValidationError("--dashboard-linger goes with --dashboard") }
            if dashboardControl, dashboard == nil { throw ValidationError("--dashboard-control goes with --dashboard") }
            if let dashboardLinger, dashboardLinger.seconds > 86_400 { throw ValidationError("--dashboard-linger is at most 24h") }
            if let mapTiles {
                guard dashboard != nil else { throw ValidationError("--map-tiles goes with --dashboard") }
                guard ["{z}", "{x}", "{y}"].allSatisfy(mapTiles.contains), mapTiles.hasPrefix("http://") || mapTiles.hasPrefix("https://") else {
                    throw ValidationError("--map-tiles is an http(s) URL with {z}, {x} and {y}, e.g. https://tiles.example/{z}/{x}/{y}.png")
                }
            }
        }

        func run() async throws {
            if ProcessInfo.processInfo.environment["CONVOY_NO_LOOPS"] == nil { ConcurrencyOnLoops.install() }
            let scenario = try loadScenario()
            let start = startAt.flatMap(Self.parseTime)
            if let start, start > Date().timeIntervalSince1970 + 86_400 { throw CommandFailure.badInput("--start-at \(startAt!) is more than a day away") }
            let (shard, runID) = try shardAndRunID(scenario, start: start)
            let inputs = try readInputs(scenario, runID: runID)
            let folder = try openFolder(scenario, shard: shard)
            let makeHandler = FileLogHandler.factory(path: folder.path + "/run.log", level: Logger.Level(rawValue: logLevel)!,
                                                     echoLevel: .critical)
            let logger = Logger(label: "convoy.run", factory: makeHandler)

            Self.raiseOpenFileLimit(logger)
            let here = shard?.devices.count ?? scenario.deviceCount
            if case .embedded = resolvedTarget(scenario.target) {
                try Self.checkOpenFileLimit(devices: here, pooled: pooledConnections, embedded: true)
            } else {
                try Self.checkOpenFileLimit(devices: here, pooled: pooledConnections, embedded: false)
            }

            // One clock for the fleet and the embedded backend: the backend stamps its rows (ended_at, created_at) and purges by the
            // same time the retention check judges them by, whatever the machine's wall clock does meanwhile (an NTP step).
            let clock = RunClock()
            let (embedded, supabase, targetKind) = try await startBackend(scenario, clock: clock, logger: Logger(label: "convoy.serve", factory: makeHandler))
            logger.info("scenario \(scenario.name): \(here) devices\(shard.map { " (shard \($0) of \(scenario.deviceCount), run \(runID))" } ?? "") against \(supabase.url) (\(targetKind)); results in \(folder.path)")

            let engine: HTTPEngine
            do {
                // CONVOY_HTTP=curl: plain HTTP through libcurl's thread too, as before LoopHTTP (for comparison).
                engine = try HTTPEngine(maxConnections: pooledConnections ? Self.poolSize : 0,
                                        plainHTTPOnLoops: ProcessInfo.processInfo.environment["CONVOY_HTTP"] != "curl")
            } catch {
                throw CommandFailure.runtime("\(error)")
            }
            // Prometheus: every recording mirrored as it happens, served while the run lasts.
            let exporter = metricsListen != nil ? PrometheusExporter() : nil
            let listener = try await startMetricsListener(exporter, logger: logger)
            defer { listener?.cancel() }
            var configuration = FleetRun.Configuration(
                scenario: scenario, scenarioFile: self.scenario, target: supabase, runID: runID, drain: drain.seconds,
                connectionPerDevice: !pooledConnections, tracks: inputs.tracks, batteryProfiles: inputs.batteryProfiles,
                probeCatalogue: inputs.catalogue, shard: shard, startAt: start)
            if let live = LiveRun.setup { configuration.live = [live.group: live.feeds] }
            configuration.adminSignUp = signup == .admin
            let fleet = FleetRun(configuration, engine: engine, metrics: Metrics(observer: exporter), clock: clock, logger: logger)
            let progress = RunProgress(devices: here)
            let live = try await startDashboard(scenario, fleet: fleet, devices: here, folder: folder, logger: logger)
            defer { live?.server.cancel() }

            let (outcome, signals) = try await runFleet(fleet, engine: engine, progress: progress, exporter: exporter, folder: folder, live: live,
                                                        embedded: embedded, url: supabase.url, logger: logger)
            defer { signals.cancel() }

            let complete = outcome.complete
            // A probe leak or a retention finding fails the run (99), whatever the thresholds say; an interrupted run is 1.
            let summary = outcome.summary(of: configuration, target: .init(kind: targetKind, url: supabase.url)) { complete, passed in
                (complete ? (passed ? ExitStatus.ok : .thresholdsFailed) : .runtimeFailure).rawValue
            }
            try writeResults(outcome, summary: summary, map: outcome.sharesLocations ? fleet.map() : nil, target: supabase, to: folder, logger: logger)
            print(summary.markdown())
            print("Results: \(folder.path)")
            logger.info("done: exit \(summary.exitCode)")
            if let live {
                signals.cancel()
                await finishDashboard(live, summary: summary, folder: folder)
            }
            if summary.exitCode != 0 {
                throw CommandFailure(status: ExitStatus(rawValue: summary.exitCode) ?? .runtimeFailure,
                                     message: !complete ? "interrupted: the summary is marked incomplete"
                                         : (summary.correctnessFailures + (summary.thresholds.allSatisfy(\.passed) ? [] : ["thresholds failed"]))
                                             .joined(separator: "; "))
            }
        }

        /// Flags over the file: target, devices (`Scenario.scaled`: the groups and communities in proportion), duration, seed.
        func applyOverrides(_ s: inout Scenario) throws {
            if let seed { s.seed = seed }
            if let duration { s.timeline.steady = duration.seconds }
            if let devices {
                guard let scaled = s.scaled(to: devices) else {
                    throw CommandFailure.badInput("--devices \(devices): the scenario has \(s.groups.count) groups; give at least one device each")
                }
                s = scaled.scenario
                for note in scaled.notes { FileHandle.standardError.write(Data("convoy: note: \(note)\n".utf8)) }
            }
            let length = FleetRun.plannedLength(s)
            guard length <= 3 * Quantity.longest else {
                throw CommandFailure.badInput("\(self.scenario): the run would last \(Int(min(length, 1e12) / 86_400)) days (ramp-up, steady, ramp-down); at most 90")
            }
        }

        func resolvedTarget(_ fromFile: Scenario.Target) -> Scenario.Target {
            if let target, let anonKey { return .project(url: target, anonKey: anonKey, serviceKey: serviceKey) }
            if let keysFile { return .keysFile(keysFile) }
            return fromFile
        }
    }
}
