import ConvoyTime
import Foundation
import Logging
import ServiceLifecycle

/// The app's retention purge as a service of the server (Green Box: the PRD's
/// `purge-old-locations`, deleting `encrypted_locations` older than the
/// retention and logging each run in `purge_log`): every `every` seconds, one
/// purge through the store (`TableStore.purge`, which asks the app). Stops at
/// a graceful shutdown or cancellation.
struct RetentionPurger: Service {
    let tables: any TableStore
    let clock: any ConvoyClock
    let retention: Double
    /// Seconds between purges; ≤ 0: never.
    let every: Double
    let logger: Logger
    /// After each purge: what else goes with the rows (Storage's orphaned files); how many.
    var after: @Sendable () async throws -> Int = { 0 }

    /// One purge, now. Returns how many rows went.
    @discardableResult
    func purgeOnce() async throws -> Int {
        let now = clock.date
        let cutoff = now.addingTimeInterval(-retention)
        let deleted = try await tables.purge(before: cutoff, now: now)
        let files = try await after()
        logger.info("retention purge", metadata: ["deleted": "\(deleted)", "cutoff": "\(Timestamps.format(cutoff))", "files": "\(files)"])
        return deleted
    }

    func run() async {
        await cancelWhenGracefulShutdown { await loop(every: every) }
    }

    /// Purges every `every` seconds until cancelled; ≤ 0 means never. `sleep`
    /// waits between purges (injected by tests to run in compressed time).
    func loop(every: Double,
              sleep: @Sendable (Double) async throws -> Void = { try await Task.sleep(for: .seconds($0)) }) async {
        guard every > 0 else { return }
        while !Task.isCancelled {
            do {
                try await sleep(every)
                try await purgeOnce()
            } catch is CancellationError {
                return
            } catch {
                logger.error("retention purge failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
