import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyTime
import ConvoyWire
import Foundation
import Logging
import Synchronization

/// `convoy run`'s main job: onboard and pair a scenario's devices, bring them
/// online at the arrival rate, let them share and receive through the steady
/// part, take them off again, wait for what is in flight, and account for
/// every update.
public final class FleetRun: Sendable {
    public let configuration: Configuration
    let engine: HTTPEngine
    let metrics: Metrics
    let clock: RunClock
    let logger: Logger
    let status = Mutex((phase: Phase.onboarding, onboarded: 0, start: Double.nan)), costs = Mutex([CostSample]())
    /// The map and who is online, once set-up has made them (for the live map).
    let live = Mutex<(map: FleetMap, presence: Presence)?>(nil)

    public init(_ configuration: Configuration, engine: HTTPEngine, metrics: Metrics = Metrics(), clock: RunClock = RunClock(),
                logger: Logger = Logger(label: "convoy.run")) {
        self.configuration = configuration
        self.engine = engine
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
    }

    /// The scenario's tracks, as long as the run needs.
    public static func tracks(for configuration: Configuration) throws(ScenarioError) -> TrackLibrary {
        try TrackLibrary.build(configuration.scenario, file: configuration.scenarioFile,
                               length: plannedLength(configuration.scenario) + configuration.drain + 60)
    }

    /// The shipped battery profiles with the scenario's `battery.profiles` over them;
    /// every group's `network` must name one.
    public static func batteryProfiles(for configuration: Configuration) throws(ScenarioError) -> BatteryProfiles {
        let scenario = configuration.scenario
        let file = configuration.scenarioFile
        var path: String?
        if let p = scenario.battery.profiles {
            path = p.hasPrefix("/") ? p : ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(p)
            guard FileManager.default.fileExists(atPath: path!) else {
                throw ScenarioError(file: file, line: scenario.battery.profilesLine, column: scenario.battery.profilesColumn, path: "battery.profiles",
                                    message: "\(path!): no such file")
            }
        }
        let profiles = try BatteryProfiles.load(overridingWith: path)
        for (i, g) in scenario.groups.enumerated() where profiles.profile(g.network) == nil {
            throw ScenarioError(file: file, line: g.networkLine, column: g.networkColumn, path: "groups[\(i)].network",
                                message: "no battery profile \"\(g.network)\" (profiles: \(profiles.networkNames.joined(separator: ", ")); add one with battery.profiles)")
        }
        return profiles
    }

    /// Seconds from the first arrival to the last departure.
    public static func plannedLength(_ s: Scenario) -> Double {
        Double(s.deviceCount) / s.timeline.arrivalRate + s.timeline.steady + s.timeline.rampDown
    }

    /// The fleet's map now (nil before set-up has made the phones' places); every phone off line once the run is over.
    /// `recent`: each tracked phone's newest that many fixes and receipts only (the live map); nil: all (map.json).
    public func map(recent: Int? = nil) -> FleetMapData? {
        guard let (map, presence) = live.withLock({ $0 }) else { return nil }
        return map.snapshot(online: presence.areOnline(Array(0..<presence.devices)), recent: recent)
    }

    /// One phone on the map, with what each friend last received from it.
    public func phone(_ device: Int) -> FleetMapData.PhoneDetail? {
        guard let (map, presence) = live.withLock({ $0 }), device >= 0, device < presence.devices else { return nil }
        return map.detail(device, online: presence.isOnline(device))
    }

    /// Runs the scenario. Cancelling the calling task ends the run early and
    /// gracefully: sharing stops, in-flight updates drain, the outcome is
    /// marked incomplete. `progress` is called about once a second.
    ///
    /// The steps, each in `Run/Steps/`: set-up (`prepare`, `setUp`), arrival (`buildDevices`, `arrive`),
    /// the steady part (`startChecks`, `steady`), the drain, verify, results.
    public func run(progress: @escaping @Sendable (Tick) -> Void = { _ in }) async throws -> Outcome {
        let stage = try await prepare()
        live.withLock { $0 = (stage.context.map, stage.context.presence) }
        let monitor = Task { [self] in await self.monitor(presence: stage.context.presence, health: stage.context.health, tally: stage.context.tally,
                                                           failures: stage.context.failures, progress: progress) }
        defer { monitor.cancel() }
        let cast: Cast
        do {
            cast = try await setUp(stage)
        } catch {
            return try await setUpEnded(stage, by: error)
        }
        let fleet = try buildDevices(stage, cast)
        let schedulerTask = Task { await stage.scheduler.run() }
        let timeline = arrive(stage, cast, fleet)
        let checks = startChecks(stage, cast, fleet, timeline)
        let (complete, probes) = await steady(timeline, checks)
        let drained = await drain(stage, cast, fleet, timeline, checks, complete: complete, schedulerTask: schedulerTask)
        let verified = await verify(stage, fleet)
        return results(stage, timeline, checks, drained, verified, complete: complete, probes: probes)
    }
}
