import Foundation

/// A tiny, honest micro-benchmark runner: warm up, then time batches with the
/// monotonic clock and report the median and spread of ns per operation.
struct Bench {
    struct Result {
        let name: String
        let medianNanos: Double
        let minNanos: Double
        let maxNanos: Double
        let operations: Int
    }

    /// Runs `body` (which does `batch` operations) `rounds` times after one warm-up round.
    static func measure(_ name: String, batch: Int, rounds: Int = 7, _ body: () throws -> Void) rethrows -> Result {
        try body()
        let clock = ContinuousClock()
        var perOp: [Double] = []
        for _ in 0..<rounds {
            let elapsed = try clock.measure { try body() }
            let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            perOp.append(ns / Double(batch))
        }
        perOp.sort()
        return Result(name: name, medianNanos: perOp[perOp.count / 2], minNanos: perOp.first!, maxNanos: perOp.last!,
                      operations: batch * rounds)
    }
}

/// Keeps a value alive so the optimiser cannot drop the work that made it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
