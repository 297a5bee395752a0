import Foundation
import Synchronization

/// What the fleet's connections and sessions are going through, as it
/// happens: phones that lost Realtime and got it back, connection attempts
/// (a reconnect storm), sessions renewed after a refusal and phones that had
/// to sign in again, inserts that failed and updates waiting in retry
/// queues. Devices report here; once a second the run takes `report`, which
/// says in plain lines what changed (for run.log) and what holds now (for
/// the live line).
public final class FleetHealth: Sendable {
    /// What holds now, for the live line and `metrics.csv`.
    public struct Now: Sendable, Equatable {
        /// Phones that had Realtime and lost it, not back yet.
        public var realtimeDown = 0
        /// Updates waiting in the phones' retry queues.
        public var queued = 0
    }

    private struct State {
        var connected: Set<Int32> = []
        var down: Set<Int32> = []
        var now = Now()
        /// When the current outage began (wall clock) and the most phones down in it.
        var outageSince: Double?
        var outagePeak = 0
        // This second's events.
        var lost = 0
        var back = 0
        var attempts = 0
        var renewed = 0
        var signedIn = 0
        var signInFailed = 0
        var failed: [String: Int] = [:]
        var retried = 0
        var givenUp: [String: Int] = [:]
    }

    private let state = Mutex(State())
    private let fleet: Int

    public init(devices: Int) { fleet = max(devices, 1) }

    // MARK: Devices report

    func connected(_ device: Int) {
        state.withLock { s in
            let d = Int32(device)
            s.connected.insert(d)
            if s.down.remove(d) != nil { s.back += 1 }
            s.now.realtimeDown = s.down.count
        }
    }

    /// A connection ended or an attempt failed (the client tries again after its backoff).
    func disconnected(_ device: Int, at wall: Double) {
        state.withLock { s in
            let d = Int32(device)
            s.attempts += 1
            guard s.connected.remove(d) != nil else { return }
            s.down.insert(d)
            s.lost += 1
            if s.outageSince == nil { s.outageSince = wall }
            s.now.realtimeDown = s.down.count
            s.outagePeak = max(s.outagePeak, s.down.count)
        }
    }

    /// The device is done with Realtime (the run ended for it): not an outage.
    func closed(_ device: Int) {
        state.withLock { s in
            let d = Int32(device)
            s.connected.remove(d)
            s.down.remove(d)
            s.now.realtimeDown = s.down.count
        }
    }

    /// A session renewed after the backend refused the token (by refresh, or by signing in again).
    func renewed(signedInAgain: Bool) {
        state.withLock { s in
            if signedInAgain { s.signedIn += 1 } else { s.renewed += 1 }
        }
    }

    func signInFailed() { state.withLock { $0.signInFailed += 1 } }

    /// An insert failed with `reason`; `queued`: it waits in the retry queue now.
    func insertFailed(_ reason: String, queued: Bool) {
        state.withLock { s in
            s.failed[reason, default: 0] += 1
            if queued { s.now.queued += 1 }
        }
    }

    /// A queued update was posted (`posted`) or given up (with its reason); either way it left the queue.
    func dequeued(posted: Bool, reason: String? = nil) {
        state.withLock { s in
            s.now.queued -= 1
            if posted { s.retried += 1 } else { s.givenUp[reason ?? "given_up", default: 0] += 1 }
        }
    }

    /// A new update joined a queue behind others (order is kept).
    func queuedBehind() { state.withLock { $0.now.queued += 1 } }

    // MARK: The run reads

    public var now: Now { state.withLock { $0.now } }

    /// How many phones of each range of device indices are off Realtime now.
    public func down(in ranges: [Range<Int>]) -> [Int] {
        state.withLock { s in ranges.map { r in s.down.reduce(0) { $0 + (r.contains(Int($1)) ? 1 : 0) } } }
    }

    /// What changed since the last call, as run.log lines; `wall` is now (Unix seconds).
    public func report(wall: Double) -> [String] {
        state.withLock { s in
            var lines: [String] = []
            if s.lost > 0 {
                lines.append("realtime: \(s.lost) phone\(s.lost == 1 ? "" : "s") lost the connection (\(s.down.count) down now)")
            }
            if s.back > 0, !s.down.isEmpty {
                lines.append("realtime: \(s.back) phone\(s.back == 1 ? "" : "s") reconnected (\(s.down.count) still down)")
            }
            if let since = s.outageSince, s.down.isEmpty {
                lines.append(String(format: "realtime: every phone is back, %.1f s after the first loss (%d were down at most)",
                                    wall - since, s.outagePeak))
                s.outageSince = nil
                s.outagePeak = 0
            }
            // A storm: many phones asking for a connection at once (after a restart, without jitter, as realtime-js does).
            if s.attempts >= 20, Double(s.attempts) >= 0.1 * Double(fleet) {
                lines.append("realtime: reconnect storm, \(s.attempts) connection attempts in the last second")
            }
            if s.renewed > 0 { lines.append("auth: \(s.renewed) session\(s.renewed == 1 ? "" : "s") refreshed after the backend refused a token") }
            if s.signedIn > 0 { lines.append("auth: \(s.signedIn) phone\(s.signedIn == 1 ? "" : "s") signed in again (the refresh was refused)") }
            if s.signInFailed > 0 { lines.append("auth: \(s.signInFailed) sign-in\(s.signInFailed == 1 ? "" : "s") again failed; trying later") }
            if !s.failed.isEmpty {
                let total = s.failed.values.reduce(0, +)
                let queued = s.now.queued
                lines.append("inserts: \(total) failed (\(Self.list(s.failed)))"
                    + (queued > 0 ? "; \(queued) update\(queued == 1 ? "" : "s") queued for retry" : ""))
            }
            if s.retried > 0 { lines.append("retry: \(s.retried) queued update\(s.retried == 1 ? "" : "s") posted (\(s.now.queued) still queued)") }
            if !s.givenUp.isEmpty { lines.append("retry: gave up \(s.givenUp.values.reduce(0, +)) (\(Self.list(s.givenUp)))") }
            (s.lost, s.back, s.attempts, s.renewed, s.signedIn, s.signInFailed, s.retried) = (0, 0, 0, 0, 0, 0, 0)
            s.failed = [:]
            s.givenUp = [:]
            return lines
        }
    }

    private static func list(_ counts: [String: Int]) -> String {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}
