import ConvoyMetrics
import Foundation
import Synchronization

/// How long presence takes to reach a group (apps whose phones track
/// presence): each time a phone tracks, the members subscribed at that moment
/// are waited for; each one's first sight of it (a join in `presence_diff`, or
/// in `presence_state` when it joins later) is `presence_seen`, and the last
/// one's is `presence_convergence`. Members who leave or lose Realtime before
/// seeing it are not waited for; a track some member never saw while it stayed
/// subscribed is `presence_unconverged` at the end. Wall-clock seconds.
public final class PresenceConvergence: Sendable {
    private struct Track {
        var subject: Int
        var at: Double
        var awaiting: Set<Int>
        var lastSeen: Double?
    }

    private struct State {
        var subscribed: Set<Int> = []
        var tracks: [Int: Track] = [:]
        var next = 0
    }

    private let state = Mutex(State())
    private let metrics: Metrics

    public init(metrics: Metrics) { self.metrics = metrics }

    /// `device` is subscribed to its group's channel now, or no longer.
    func subscribed(_ device: Int, _ yes: Bool) {
        let done: [(Double, Double?)] = state.withLock { s in
            if yes {
                s.subscribed.insert(device)
                return []
            }
            s.subscribed.remove(device)
            var done: [(Double, Double?)] = []
            for (k, var t) in s.tracks where t.awaiting.remove(device) != nil {
                if t.awaiting.isEmpty {
                    done.append((t.at, t.lastSeen))
                    s.tracks[k] = nil
                } else {
                    s.tracks[k] = t
                }
            }
            return done
        }
        for (at, last) in done { if let last { metrics.record(.presenceConvergence, seconds: max(0, last - at)) } }
    }

    /// `device` tracked its presence at `at`; its group's other members are `members`.
    func tracked(_ device: Int, members: [Int], at: Double) {
        metrics.count(.presenceTracks)
        state.withLock { s in
            // A new track supersedes the last one's wait (it was re-sent after a reconnection).
            for (k, t) in s.tracks where t.subject == device { s.tracks[k] = nil }
            let awaiting = Set(members).intersection(s.subscribed).subtracting([device])
            guard !awaiting.isEmpty else { return }
            s.next += 1
            s.tracks[s.next] = Track(subject: device, at: at, awaiting: awaiting)
        }
    }

    /// `observer` saw `subject` present at `at`.
    func saw(_ subject: Int, by observer: Int, at: Double) {
        let (seen, converged): (Double?, Double?) = state.withLock { s in
            guard let (k, t) = s.tracks.first(where: { $0.value.subject == subject && $0.value.awaiting.contains(observer) }) else {
                return (nil, nil)
            }
            var track = t
            track.awaiting.remove(observer)
            track.lastSeen = max(track.lastSeen ?? at, at)
            if track.awaiting.isEmpty {
                s.tracks[k] = nil
                return (at - t.at, track.lastSeen! - t.at)
            }
            s.tracks[k] = track
            return (at - t.at, nil)
        }
        if let seen { metrics.record(.presenceSeen, seconds: max(0, seen)) }
        if let converged { metrics.record(.presenceConvergence, seconds: max(0, converged)) }
    }

    /// Tracks still waiting for a member who stayed subscribed: counted at the end of the run.
    func finish() {
        let open = state.withLock { s in
            defer { s.tracks = [:] }
            return s.tracks.count
        }
        if open > 0 { metrics.count(.presenceUnconverged, by: open) }
    }
}
