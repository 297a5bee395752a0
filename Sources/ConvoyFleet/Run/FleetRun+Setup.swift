import ConvoyCrypto
import ConvoyMetrics
import ConvoyWire
import Foundation
import Logging
import Synchronization

/// Set-up before the timeline: sign-ups, and when the first device arrives.
extension FleetRun {
    /// When the first device arrives: `startAt` (late when set-up overran it: warned, counted), else in a moment.
    func startTime() -> Double {
        let soon = clock.now() + 0.2
        guard let startAt = configuration.startAt else { return soon }
        let at = clock.monotonic(ofWall: startAt)
        if at < soon {
            logger.warning("set-up ended \(String(format: "%.1f", soon - at)) s after --start-at: this process's first arrivals are late")
            metrics.count(.startLateMs, by: Int((soon - at) * 1000))
        } else {
            logger.info("waiting \(String(format: "%.1f", at - clock.now())) s for --start-at")
        }
        return at
    }

    /// Signs `devices` up, `onboardingConcurrency` at a time; a shard's with their derived passwords.
    func signUpAll(_ onboarding: Onboarding, devices: [Int], connections: [HTTPConnection?]) async throws -> [Int: DeviceAccount] {
        var accounts: [Int: DeviceAccount] = [:]
        let shard = configuration.shard
        let runID = configuration.runID
        try await withThrowingTaskGroup(of: DeviceAccount.self) { group in
            var next = 0
            func start() {
                let i = devices[next]
                next += 1
                group.addTask { [clock, metrics, logger] in
                    let started = clock.now()
                    let account: DeviceAccount
                    do {
                        account = try await onboarding.signUp(i, password: shard?.password(runID: runID, device: i), on: connections[i]) { [logger] e in
                            metrics.count(.signUpRetries)
                            logger.debug("device \(i)'s sign-up got no answer (\(e)): signing in, or up, again")
                        }
                    } catch let e as SupabaseError {
                        guard case .http(429, _) = e.kind else { throw e }
                        // What to do about it, not only what happened: a fleet signs up from one address.
                        throw SupabaseError(kind: e.kind, message: e.message + " (device \(i)'s sign-up): " + SetUpFailure.rateLimitHint)
                    }
                    metrics.record(.signup, seconds: clock.now() - started)
                    return account
                }
            }
            while next < min(devices.count, configuration.onboardingConcurrency) { start() }
            while let account = try await group.next() {
                accounts[account.index] = account
                status.withLock { $0.onboarded += 1 }
                if next < devices.count { start() }
            }
        }
        return accounts
    }

    /// What this configuration cannot run yet, refused before anything is set up.
    func checkRunnable() throws {
        let scenario = configuration.scenario
        let shard = configuration.shard
        if shard != nil, scenario.migration != nil, !configuration.app.pairsDuringRun {
            throw ScenarioError(file: configuration.scenarioFile, line: 0, column: 0, path: "migration",
                                message: "a sharded run cannot reinstall devices whose friends accept invite codes (a friend on another shard "
                                    + "would accept the new invite); drop migration: or --shard, or pair on the phones (pairing: prd)")
        }
        if shard != nil, let why = Self.shapeRefusesShards(configuration.app) {
            throw ScenarioError(file: configuration.scenarioFile, line: 0, column: 0, path: "app", message: why)
        }
        let declared = configuration.app.declared?.spec
        if shard != nil, configuration.app.sharesLocation, let app = configuration.app.locations, app.plaintext(of: LocationPayload(lat: 0, lon: 0, ts: 0, acc: 0, seq: 1)).seq == nil {
            throw ScenarioError(file: configuration.scenarioFile, line: 0, column: 0, path: "app",
                                message: "a sharded run needs a payload that carries Convoy's seq (the other shards cannot see what this one sealed); "
                                    + (declared.map { "add \"{{seq}}\" and \"{{sent_ns}}\" to the plaintext in \($0.file)" }
                                        ?? "use app: {name: \(configuration.app.name), payload: convoy}") + " or drop --shard")
        }
    }
}
