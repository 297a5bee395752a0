import Foundation

/// Where a reported fix came from.
public enum PositionSource: String, Hashable, Sendable, Codable {
    case gps, wifi, cell
}

/// A fix as the phone would report it.
public struct NoisyFix: Hashable, Sendable {
    public var position: GeoPoint
    /// Reported 68 % radius, metres: consistent with the error applied.
    public var accuracy: Double
    public var source: PositionSource
    /// True when the phone could not use GPS (iOS "reduced accuracy"-like).
    public var reducedAccuracy: Bool
    /// True for an urban-canyon multipath outlier.
    public var outlier: Bool
    /// The error applied, metres north and east of the truth.
    public var errorNorth: Double
    public var errorEast: Double
}

/// One device's GPS error process: first-order Gauss–Markov on each axis,
///   x(k+1) = e^(−Δt/τ) x(k) + σ √(1 − e^(−2Δt/τ)) w(k),
/// with urban-canyon outliers, GPS-denied fallback and dropouts on top.
/// Seeded: the same seed and query times give the same fixes.
public struct NoiseGenerator: Sendable {
    public let model: AccuracyModel
    private var rng: SeededGenerator
    /// Unit-variance Gauss–Markov state; scaled by σ(t) when applied.
    private var zNorth = 0.0, zEast = 0.0
    private var lastTime: Double?
    private var episodeEnd: Double?
    private var fallbackAccuracy = 0.0

    public init(model: AccuracyModel, seed: UInt64) throws(GeoError) {
        try model.validate()
        self.model = model
        self.rng = SeededGenerator(seed: seed)
    }

    /// The reported fix at device time `t` (seconds, non-decreasing) for the
    /// true position `truth`; nil when this fix drops out.
    public mutating func apply(to truth: GeoPoint, at t: Double, hdop: Double? = nil) -> NoisyFix? {
        advance(to: t)
        if model.dropoutProbability > 0, rng.chance(model.dropoutProbability) { return nil }

        if isDenied(at: t) {
            let σ = fallbackAccuracy / AccuracyModel.radius68PerSigma
            let n = σ * rng.normal(), e = σ * rng.normal()
            return NoisyFix(position: truth.offset(north: n, east: e), accuracy: fallbackAccuracy,
                            source: model.denied.fallback == .wifi ? .wifi : .cell, reducedAccuracy: true,
                            outlier: false, errorNorth: n, errorEast: e)
        }
        let canyon = (hdop.map { $0 >= model.urbanCanyon.hdopThreshold } ?? false)
            || model.urbanCanyon.windows.contains { $0.contains(t) }
        if canyon, rng.chance(model.urbanCanyon.outlierProbability) {
            let acc = model.urbanCanyon.outlierAccuracy68
            let σ = acc / AccuracyModel.radius68PerSigma
            let n = σ * rng.normal(), e = σ * rng.normal()
            return NoisyFix(position: truth.offset(north: n, east: e), accuracy: acc, source: .gps,
                            reducedAccuracy: false, outlier: true, errorNorth: n, errorEast: e)
        }
        // Error grows with HDOP (error ≈ UERE × HDOP); HDOP ≤ 1 is open sky.
        let acc = model.accuracy68 * max(1, hdop ?? 1)
        let σ = acc / AccuracyModel.radius68PerSigma
        let n = σ * zNorth, e = σ * zEast
        return NoisyFix(position: truth.offset(north: n, east: e), accuracy: acc, source: .gps,
                        reducedAccuracy: false, outlier: false, errorNorth: n, errorEast: e)
    }

    /// Steps the Gauss–Markov state and the random denied episodes to `t`.
    private mutating func advance(to t: Double) {
        guard let last = lastTime else {
            zNorth = rng.normal()  // start in the stationary distribution
            zEast = rng.normal()
            lastTime = t
            return
        }
        let dt = max(0, t - last)
        lastTime = t
        guard dt > 0 else { return }
        let φ = exp(-dt / model.correlationTime)
        let k = (1 - φ * φ).squareRoot()
        zNorth = φ * zNorth + k * rng.normal()
        zEast = φ * zEast + k * rng.normal()

        if let end = episodeEnd, t >= end { episodeEnd = nil }
        if episodeEnd == nil, let mean = model.denied.meanInterval, rng.chance(1 - exp(-dt / mean)) {
            episodeEnd = t - model.denied.meanDuration * log(1 - rng.uniform())
            drawFallbackAccuracy()
        }
    }

    private mutating func isDenied(at t: Double) -> Bool {
        if episodeEnd != nil { return true }
        guard model.denied.windows.contains(where: { $0.contains(t) }) else { return false }
        if fallbackAccuracy == 0 { drawFallbackAccuracy() }
        return true
    }

    private mutating func drawFallbackAccuracy() {
        let r = model.denied.fallback.accuracyRange
        fallbackAccuracy = rng.uniform(r.lowerBound, r.upperBound)
    }
}
