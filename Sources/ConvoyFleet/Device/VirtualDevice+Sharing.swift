import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation

/// Sharing: a tick per cadence, the position measured (a live receiver's fix, or the track's with its
/// noise), then delivered as the app's shape delivers it (`Delivery/VirtualDevice+Shape.swift`).
extension VirtualDevice {
    /// A position as the phone measured it for one tick.
    struct Measured: Sendable {
        var position: GeoPoint
        var accuracy: Double
        var reduced: Bool
        /// Course over ground, degrees (nil: standing still, or a live fix), and speed, metres a second (nil: unknown).
        var heading: Double? = nil
        var speed: Double? = nil
    }

    /// Below this speed (m/s) a course is noise: a phone standing still has none, as Core Location gives −1.
    static let headingMinimumSpeed = 0.5

    /// One sharing tick at its intended time (greenbox-prd.md §4.4, "To send a location").
    func share(intended: Double) async {
        guard let since = life.sharing(at: intended) else { return }
        let clock = context.clock
        let options = context.options
        let next = intended + rng.uniform(profile.cadence.lowerBound, profile.cadence.upperBound)
        if options.workload == .open {
            context.scheduler.at(next) { [weak self] t in await self?.share(intended: t) }
        }
        defer {
            if options.workload == .closed {
                context.scheduler.at(max(next, clock.now())) { [weak self] t in await self?.share(intended: t) }
            }
        }
        if profile.sharesNothing {
            // "When In Use" only, in the background: no location reaches the app (PRD §4.2).
            metrics.count(.backgroundNotPermitted)
            return
        }
        let measured: Measured
        // The map: where the phone truly is, and whether it has a fix and a network.
        let offline = profile.link?.isOffline(at: ShapingProxy.now()) == true
        func mapped(_ position: GeoPoint?, _ state: FleetMapData.FixState) {
            context.map.moved(index, at: clock.wall(intended), to: position, state: offline ? .offline : state)
        }
        if let feed = profile.live {
            // A live receiver: its newest fix, as it is.
            guard let fix = feed.current(now: clock.wall(intended)) else {
                metrics.count(.liveNoFix)
                mapped(nil, .noFix)
                return
            }
            metrics.count(.liveShared)
            mapped(fix.position, .gps)
            measured = Measured(position: fix.position, accuracy: fix.accuracy, reduced: false)
        } else {
            let t = intended - since
            let fix = replayer.fix(at: t)
            guard let noisy = noise.apply(to: fix.position, at: t, hdop: fix.hdop) else {
                metrics.count(.gpsDropouts)
                mapped(fix.position, .noFix)
                return
            }
            mapped(fix.position, noisy.reducedAccuracy ? .reduced : .gps)
            // The course and speed a receiver reports come from Doppler, not from the noisy positions: the track's own.
            measured = Measured(position: noisy.position, accuracy: noisy.accuracy, reduced: noisy.reducedAccuracy,
                                heading: fix.speed >= Self.headingMinimumSpeed ? fix.heading : nil, speed: fix.speed)
        }
        if profile.background, profile.backgroundMode == .significantChange, let last = lastShare,
           intended - last.time < options.significantInterval || measured.position.distance(to: last.position) < options.significantDistance {
            metrics.count(.backgroundSkipped)
            return
        }
        guard friends.contains(where: \.sharedWith) else { return }
        await deliver(measured, intended: intended)
    }

    /// `payload` sealed to `key`, timed (`seal`, or `encode` for an app that encrypts nothing, and the CPU it cost);
    /// nil when it cannot be (counted).
    func sealTimed(_ payload: LocationPayload, to key: PublicKey) -> String? {
        let started = context.clock.now()
        let sealed: String
        do {
            sealed = try locationApp.seal(payload, to: key)
        } catch {
            metrics.count(.sealFailures)
            return nil
        }
        let sealing = context.clock.now() - started
        metrics.record(locationApp.encrypts ? .seal : .encode, seconds: sealing)
        spendCPU(seconds: sealing)
        return sealed
    }

    /// Where a tick's update to friend `index` is expected: here (online), on another shard, or nowhere (offline).
    func addressee(_ index: Int, online: Bool, expected: inout [Int32], remote: inout [Int32], offline: inout Int) {
        if let shard = context.shard, !shard.owns(index) {
            remote.append(Int32(index))
        } else if online {
            expected.append(Int32(index))
        } else {
            offline += 1
        }
    }

    /// Counts a tick and puts it in the ledger; its entry there.
    func recordTick(_ tick: UInt64, expected: [Int32], remote: [Int32], offline: Int, wall: Double) -> Int {
        metrics.count(.updates)
        metrics.count(.sent, by: expected.count)
        context.tally.sent(by: index, expected.count)
        metrics.count(.sentOffline, by: offline)
        if !remote.isEmpty { metrics.count(.sentOtherShards, by: remote.count) }
        sentOffline += offline
        ledger.sent.append(.init(seq: tick, recipients: expected, failure: nil, wall: wall, remote: remote))
        return ledger.sent.count - 1
    }

    /// What a request that failed before it was pairing.answered still sent, bytes (its updates and their framing).
    static func estimatedBody(_ updates: [OutgoingUpdate]) -> Int {
        updates.reduce(2) { $0 + $1.recipient.utf8.count + $1.body.utf8.count + 90 }
    }

    /// Counts a failed request; returns the reason its updates were lost. A 401 (the token refused)
    /// renews the session in the background, unless `renew` is false (the renewal's own requests).
    /// Counts a failed request under its status or transport error, and notes it (with `operation`) in the run's
    /// `FailureLog`, whose first of each kind says which request failed and what the server pairing.answered.
    func countFailure(_ error: SupabaseError, renew: Bool = true, operation: String = "request") -> String {
        context.failures.note(operation, error)
        if error.kind == .notJoined {
            // Never reached the network: not an HTTP error.
            metrics.count(.groupNotJoined)
            return "not_joined"
        }
        metrics.count(.httpErrors)
        if renew, error.status == 401 { Task { [weak self] in await self?.renewAfterRefusal() } }
        if let status = error.status {
            metrics.count(.httpErrors(status: status))
            return "http_\(status)"
        }
        if case .wire(let kind) = error.kind {
            let name = "\(kind)"
            metrics.count(.transportErrors(kind: name))
            return name
        }
        return "unexpected_response"
    }
}
