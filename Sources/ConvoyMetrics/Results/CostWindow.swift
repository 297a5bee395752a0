/// One reading of the harness, taken once a second: its own CPU and the updates it had received, for the cost
/// of a window of the run.
public struct CostSample: Sendable, Equatable {
    /// Seconds from the first arrival.
    public var t: Double
    /// CPU (user + system) used so far, seconds.
    public var cpuSeconds: Double
    /// Updates received so far (the `received` counter).
    public var received: Int

    public init(t: Double, cpuSeconds: Double, received: Int) {
        (self.t, self.cpuSeconds, self.received) = (t, cpuSeconds, received)
    }
}

extension RunSummary.Resources {
    /// The harness's cost over a window of the run, named by its bounds: CPU per update received in it.
    public struct Window: Codable, Sendable, Equatable {
        /// Seconds from the first arrival.
        public var fromSeconds: Double
        public var toSeconds: Double
        public var cpuSeconds: Double
        /// Updates received (decrypted) in the window.
        public var received: Int
        public var cpuPerDeliveredMicroseconds: Double?

        enum CodingKeys: String, CodingKey {
            case received
            case fromSeconds = "from_s"
            case toSeconds = "to_s"
            case cpuSeconds = "cpu_s"
            case cpuPerDeliveredMicroseconds = "cpu_per_delivered_us"
        }
    }

    /// After the last arrival the steady part settles this long before it is measured; it stops this long before
    /// the ramp-down (as `scripts/bench-peers` measures k6 and Convoy alike).
    public static let steadySettle = 15.0, steadyMargin = 5.0
    /// A shorter steady window says too little to report.
    public static let steadyShortest = 10.0

    /// The steady part of a run whose last phone arrived `lastArrival` seconds after the first and whose
    /// ramp-down began at `rampDown`: from `steadySettle` after the one to `steadyMargin` before the other,
    /// between the samples nearest those times. Nil when that is under `steadyShortest` or not sampled.
    public static func steady(_ samples: [CostSample], lastArrival: Double, rampDown: Double) -> Window? {
        let from = lastArrival + steadySettle, to = rampDown - steadyMargin
        guard to - from >= steadyShortest,
              let a = samples.first(where: { $0.t >= from }), let b = samples.last(where: { $0.t <= to }),
              b.t - a.t >= steadyShortest
        else { return nil }
        let cpu = b.cpuSeconds - a.cpuSeconds, received = b.received - a.received
        return Window(fromSeconds: a.t, toSeconds: b.t, cpuSeconds: cpu, received: received,
                      cpuPerDeliveredMicroseconds: received > 0 ? cpu / Double(received) * 1e6 : nil)
    }
}
