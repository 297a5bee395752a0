import Foundation
import Logging

/// The PRD's `purge-old-locations` job: every `every` seconds, delete
/// `encrypted_locations` older than `retention`. Each run is logged and kept
/// in `purge_log`, which only the service role can read.
struct RetentionPurger: Sendable {
    let tables: any TableStore
    let clock: any ServerClock
    let retention: Double
    let logger: Logger

    /// One purge, now. Returns how many rows went.
    @discardableResult
    func purgeOnce() async throws -> Int {
        let now = clock.now()
        let cutoff = now.addingTimeInterval(-retention)
        let deleted = try await tables.purge(before: cutoff, now: now)
        logger.info("purge-old-locations", metadata: ["deleted": "\(deleted)", "cutoff": "\(Timestamps.format(cutoff))"])
        return deleted
    }

    /// Runs until cancelled; `every` ≤ 0 means never (the purge is disabled).
    /// `sleep` waits between purges (injected by tests to run in compressed time).
    func run(every: Double,
             sleep: @Sendable (Double) async throws -> Void = { try await Task.sleep(for: .seconds($0)) }) async {
        guard every > 0 else { return }
        while !Task.isCancelled {
            do {
                try await sleep(every)
                try await purgeOnce()
            } catch is CancellationError {
                return
            } catch {
                logger.error("purge-old-locations failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
