import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation
import Synchronization

/// After-action replay (survale-spec.md §8): an owner (the case agent, or an analyst with its rights) loads its
/// group's archived positions and chat a page at a time. As load, every `social.replay_every` while the group
/// runs (`replay_load`: the whole replay's load time); as a check, once right after it ends the group: what
/// comes back must be every position its members archived and every line they posted (`ReplayLedger`).
extension VirtualDevice {
    /// The largest page a replay asks for, rows.
    static let replayPage = 1000

    /// Schedules the owner's replays during the run, the first at a random phase of the interval.
    func scheduleReplays(from arrival: Double) {
        guard let every = group.role?.replayEvery, group.role?.owner == true else { return }
        context.scheduler.at(arrival + rng.uniform(0, every)) { [weak self] t in await self?.replayDuringRun(intended: t) }
    }

    private func replayDuringRun(intended: Double) async {
        guard let every = group.role?.replayEvery, life.onlineSince != nil, !group.sawGroupEnd else { return }
        context.scheduler.at(intended + every) { [weak self] t in await self?.replayDuringRun(intended: t) }
        _ = await loadReplay()
    }

    /// Right after it ended its group: the replay as it is now, kept for the check.
    func finalReplay() async {
        guard groupApp.archiveEvery != nil, let groupID = groupApp.groupID(of: account.userID) else { return }
        let load = await loadReplay()
        context.replays.record(group: groupID, owner: index, load: load, at: context.clock.wallNow())
    }

    /// One replay, timed; nil when a request failed (counted with its reason).
    private func loadReplay() async -> ReplayLoad? {
        let clock = context.clock
        let started = clock.now()
        do {
            let load = try await groupApp.replay(as: account.session, page: Self.replayPage, via: http)
            metrics.record(.replayLoad, seconds: clock.now() - started)
            metrics.count(.replays)
            metrics.count(.replayRows, by: load.positions + load.messages)
            metrics.count(.httpRequests, by: load.requests)
            spendHTTP(body: 0, response: load.bytes + 400 * load.requests, since: started)
            return load
        } catch {
            metrics.count(.replayFailures)
            metrics.count(.httpRequests)
            _ = countFailure(error, operation: "replay")
            spendHTTP(body: 0, since: started)
            return nil
        }
    }
}

/// Each group's replay as its owner read it back right after ending it (nil: the read failed), by group id.
public final class ReplayLedger: Sendable {
    public struct Entry: Sendable {
        public var owner: Int
        public var load: ReplayLoad?
        public var at: Double
    }

    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    func record(group: String, owner: Int, load: ReplayLoad?, at: Double) {
        entries.withLock { $0[group] = Entry(owner: owner, load: load, at: at) }
    }

    public var all: [String: Entry] { entries.withLock { $0 } }
}
