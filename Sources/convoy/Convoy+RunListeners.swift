import ConvoyFleet
import ConvoyMetrics
import ConvoyServer
import ConvoyWire
import Foundation
import Logging
import UnixSignals

/// `convoy run`'s listeners: `--dashboard` (the feed the run publishes to once a second, and the server that shows
/// it) and `--metrics-listen` (Prometheus).
extension Convoy.Run {
    struct LiveDashboard {
        let feed: DashboardFeed
        let server: Task<Void, Never>
        let url: String
        /// `--dashboard-control`: the page may stop the run.
        let control: DashboardControl?
    }

    /// Starts the dashboard's server and waits until it listens (nil without `--dashboard`); a port that
    /// cannot be bound is a runtime failure.
    func startDashboard(_ scenario: Scenario, fleet: FleetRun, devices: Int, folder: ResultsFolder,
                        logger: Logger) async throws -> LiveDashboard? {
        guard let text = dashboard, let server = DashboardServer(text) else { return nil }
        let header = DashboardFeed.Header(scenario: scenario.name, app: scenario.app.name, devices: devices,
                                          planned: FleetRun.plannedLength(scenario), sharesLocations: fleet.configuration.app.sharesLocation,
                                          groups: scenario.groups.map(\.name), mapTiles: mapTiles, thresholds: scenario.thresholds.map(\.text),
                                          actions: fleet.configuration.app.declared?.spec.actions.map(\.name), control: dashboardControl)
        let feed = DashboardFeed(header, thresholds: scenario.thresholds)
        let control = dashboardControl ? DashboardControl() : nil
        let report = URL(fileURLWithPath: folder.path).appendingPathComponent("report.html")
        let (task, port) = try await Self.listening("--dashboard \(text)") { ready in
            try await server.run(feed, report: { FileManager.default.contents(atPath: report.path) }, map: { fleet.map(recent: Self.liveTrack) },
                                 phone: { fleet.phone($0) },
                                 results: { name in feed.end == nil ? nil : FileManager.default.contents(atPath: (folder.path as NSString).appendingPathComponent(name)) },
                                 control: control, logger: logger, onReady: ready)
        }
        let url = server.url(port: port)
        logger.info("dashboard at \(url)")
        FileHandle.standardError.write(Data("convoy: dashboard at \(url)\n".utf8))
        // The token goes to the terminal alone (run.log has the address only): the link fills it in on the page (a URL's
        // fragment is never sent to a server).
        if let control {
            logger.info("dashboard control on: the page may stop the run with the token printed on standard error")
            FileHandle.standardError.write(Data("convoy: the page may stop the run: \(url)#token=\(control.token)\n".utf8))
        }
        return LiveDashboard(feed: feed, server: task, url: url, control: control)
    }

    /// Starts `--metrics-listen`'s server and waits until it listens (nil without the flag).
    func startMetricsListener(_ exporter: PrometheusExporter?, logger: Logger) async throws -> Task<Void, Never>? {
        guard let exporter, let text = metricsListen, let listener = MetricsListener(text) else { return nil }
        let (task, port) = try await Self.listening("--metrics-listen \(text)") { ready in
            try await listener.run(exporter, logger: logger, onReady: ready)
        }
        logger.info("Prometheus metrics at http://\(listener.host):\(port)/metrics")
        FileHandle.standardError.write(Data("convoy: Prometheus metrics at http://\(listener.host):\(port)/metrics\n".utf8))
        return task
    }

    /// A server started in a task of its own, once it listens: the task and the bound port. A port that cannot be
    /// bound is a runtime failure named by `flag`.
    static func listening(_ flag: String,
                          _ serve: @escaping @Sendable (_ ready: @escaping @Sendable (Int) async -> Void) async throws -> Void) async throws -> (Task<Void, Never>, Int) {
        let (ready, signal) = AsyncStream<Result<Int, any Error>>.makeStream()
        let task = Task {
            do {
                try await CannotListen.naming(address: flag) { try await serve { port in signal.yield(.success(port)) } }
            } catch {
                signal.yield(.failure(error))
            }
            signal.finish()
        }
        var it = ready.makeAsyncIterator()
        switch await it.next() {
        case .success(let port): return (task, port)
        case .failure(let error as CannotListen):
            throw CommandFailure.runtime("\(flag): \(error.reason) (give another port, or 0 for a free one)")
        case .failure(let error): throw CommandFailure.runtime("\(flag): \(error)")
        case nil: throw CommandFailure.runtime("\(flag): the server stopped before it listened")
        }
    }

    /// The live map's tracks: each tracked phone's newest 120 fixes and receipts (read every two seconds; map.json
    /// and report.html have all that is kept).
    static let liveTrack = 120

    /// A tick in the feed's plain terms.
    static func second(_ tick: FleetRun.Tick) -> DashboardFeed.Second {
        DashboardFeed.Second(elapsed: tick.elapsed, phase: tick.phase.rawValue, onboarded: tick.onboarded, online: tick.devicesOnline,
                             offRealtime: tick.health.realtimeDown, retryQueued: tick.health.queued, interval: tick.interval,
                             totals: tick.totals, groups: tick.groups, failures: tick.failures, processes: tick.process.map { [$0] } ?? [])
    }

    /// The end to every page, then `--dashboard-linger` (Ctrl-C ends it sooner).
    func finishDashboard(_ live: LiveDashboard, summary: RunSummary, folder: ResultsFolder) async {
        live.feed.finish(DashboardEnd(summary, report: "report.html", results: folder.path))
        guard let linger = dashboardLinger?.seconds, linger > 0 else { return }
        FileHandle.standardError.write(Data("convoy: the dashboard stays at \(live.url) for \(Format.duration(linger)) (Ctrl-C ends it)\n".utf8))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: .seconds(linger)) }
            group.addTask {
                for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { break }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// The fleet run until it ends, each second shown (progress, metrics.csv, Prometheus, the dashboard); SIGINT or
    /// SIGTERM stops it gracefully and a second one quits at once. The embedded backend is stopped either way (after the
    /// HTTP engine, when the run ended). Returns the outcome and the signal watch, which the caller keeps until the
    /// dashboard's linger takes the signals over.
    func runFleet(_ fleet: FleetRun, engine: HTTPEngine, progress: RunProgress, exporter: PrometheusExporter?, folder: ResultsFolder,
                  live: LiveDashboard?, embedded: EmbeddedServer?, url: String, logger: Logger) async throws -> (FleetRun.Outcome, Task<Void, Never>) {
        let runTask = Task { () async throws -> FleetRun.Outcome in
            try await fleet.run { tick in
                progress.show(tick)
                exporter?.set("devices_online", to: Double(tick.devicesOnline))
                exporter?.set("elapsed_seconds", to: tick.elapsed)
                exporter?.set("realtime_down", to: Double(tick.health.realtimeDown))
                exporter?.set("retry_queue", to: Double(tick.health.queued))
                if ![.onboarding, .pairing, .waiting].contains(tick.phase) { folder.append(row: progress.row(tick)) }
                live?.feed.publish(Self.second(tick))
            }
        }
        live?.control?.onStop {
            logger.notice("stopped from the dashboard: stopping gracefully")
            FileHandle.standardError.write(Data("\nconvoy: stopped from the dashboard: stopping the devices and draining\n".utf8))
            runTask.cancel()
        }
        let signals = Task {
            for await signal in await UnixSignalsSequence(trapping: .sigint, .sigterm) {
                logger.notice("\(signal): stopping gracefully")
                FileHandle.standardError.write(Data("\nconvoy: \(signal): stopping the devices and draining (again to quit at once)\n".utf8))
                runTask.cancel()
                break
            }
            for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { Foundation.exit(ExitStatus.runtimeFailure.rawValue) }
        }
        defer { progress.finish() }
        do {
            let outcome = try await runTask.value
            engine.shutdown()
            await embedded?.stop()
            return (outcome, signals)
        } catch let error as ScenarioError {
            signals.cancel()
            await embedded?.stop()
            throw CommandFailure.badInput(error.description)
        } catch {
            signals.cancel()
            await embedded?.stop()
            logger.error("the run failed: \(error)")
            throw CommandFailure.runtime(runTask.isCancelled ? "interrupted during onboarding" : "the run against \(url) failed: \(error)")
        }
    }
}
