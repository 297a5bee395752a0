/// One fleet at a time across this target's suites: a fleet's figures are
/// timed in real seconds, and two fleets (with their embedded backends) at
/// once on a 2-core machine measure the machine, not the fleet. `.serialized`
/// orders a suite's own tests only; every test that runs a `FleetRun` goes
/// through this gate.
actor FleetGate {
    static let shared = FleetGate()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` when no other fleet runs.
    static func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await shared.enter()
        do {
            let value = try await body()
            await shared.leave()
            return value
        } catch {
            await shared.leave()
            throw error
        }
    }

    private func enter() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func leave() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
