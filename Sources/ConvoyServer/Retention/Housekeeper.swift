import Foundation
import Logging
import ServiceLifecycle

/// The app's housekeeping as a service of the server (Survale: ending
/// operations nobody has been on for the auto-end time): every `every`
/// seconds, one round through the app. Stops at a graceful shutdown or
/// cancellation.
struct Housekeeper: Service {
    let app: any ServerApp
    let context: HousekeepingContext
    /// Seconds between rounds; nil or ≤ 0: never.
    let every: Double?
    let logger: Logger

    /// One round, now; what it did.
    @discardableResult
    func once() async throws -> [String] {
        let done = try await app.housekeeping(context)
        for line in done { logger.info("\(line)") }
        return done
    }

    func run() async {
        await cancelWhenGracefulShutdown { await loop() }
    }

    func loop(sleep: @Sendable (Double) async throws -> Void = { try await Task.sleep(for: .seconds($0)) }) async {
        guard let every, every > 0 else { return }
        while !Task.isCancelled {
            do {
                try await sleep(every)
                try await once()
            } catch is CancellationError {
                return
            } catch {
                logger.error("housekeeping failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
