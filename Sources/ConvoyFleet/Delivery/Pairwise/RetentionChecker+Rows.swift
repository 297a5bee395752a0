import ConvoyMetrics
import ConvoyWire
import Foundation
import Synchronization

/// The retention check of a pairwise app (Green Box, PRD §3.3), row by row: at each round the next sampled recipients
/// each read their own oldest rows and whether the young rows they received are still there, and with a service key
/// the whole table is scanned; `RetentionChecker` judges what they read.
extension RetentionChecker {
    /// One round: the next `sample` devices (round-robin) each check their own updates, and a scan with the service key.
    func round(devices: [VirtualDevice], app: any PairwiseApp, http: SupabaseHTTP, serviceKey: String?, clock: RunClock, t: Double) async {
        let picked: [VirtualDevice] = state.withLock { s in
            guard !devices.isEmpty else { return [] }
            let n = min(policy.sample, devices.count)
            defer { s.cursor = (s.cursor + n) % devices.count }
            return (0..<n).map { devices[(s.cursor + $0) % devices.count] }
        }
        let ages = await withTaskGroup(of: Double?.self) { group in
            for device in picked {
                group.addTask { await self.check(device, app: app, http: http, clock: clock) }
            }
            var ages: [Double] = []
            for await age in group { if let age { ages.append(age) } }
            return ages
        }
        var oldest = ages.max()
        if policy.scan, let serviceKey {
            if let rows = try? await app.oldestUpdates(limit: 200, serviceKey: serviceKey, via: http) {
                metrics.count(.retentionHTTPRequests)
                if let age = judge(readable: rows, now: clock.wallNow(), foundBy: "scan") { oldest = max(oldest ?? 0, age) }
            } else {
                metrics.count(.retentionCheckErrors)
            }
        }
        mark(t: t, oldestAge: oldest)
    }

    /// One recipient: its oldest updates, then whether the young ones it received are still there.
    private func check(_ device: VirtualDevice, app: any PairwiseApp, http: SupabaseHTTP, clock: RunClock) async -> Double? {
        guard let view = await device.retentionView() else { return nil }
        let oldest: Double?
        do {
            let rows = try await app.oldestUpdates(of: view.userID, limit: 50, token: view.token, via: http)
            metrics.count(.retentionHTTPRequests)
            oldest = judge(readable: rows, now: clock.wallNow(), foundBy: "recipient")
        } catch {
            metrics.count(.retentionCheckErrors)
            return nil
        }
        let due = Self.dueForEarlyCheck(view.recent, now: clock.wallNow(), policy: policy)
        guard !due.isEmpty else { return oldest }
        do {
            let present = try await app.presentUpdates(due.map(\.id), of: view.userID, token: view.token, via: http)
            metrics.count(.retentionHTTPRequests)
            judgeEarly(received: due, present: present, now: clock.wallNow())
        } catch {
            metrics.count(.retentionCheckErrors)
        }
        return oldest
    }
}
