import Foundation

/// The lower branch W₋₁ of the Lambert W function on [−1/e, 0), which the
/// planar Laplace mechanism needs to invert its radial CDF.
enum LambertW {
    /// W₋₁(x) for x in [−1/e, 0); Halley's iteration to full double precision.
    static func minusOne(_ x: Double) -> Double {
        precondition(x >= -1 / M_E - 1e-15 && x < 0, "W₋₁ is defined on [−1/e, 0)")
        if x <= -1 / M_E { return -1 }
        // Initial guess: branch-point series near −1/e, asymptotic form near 0.
        var w: Double
        if x < -0.25 {
            let p = -(2 * (1 + M_E * x)).squareRoot()
            w = -1 + p - p * p / 3 + 11 / 72 * p * p * p
        } else {
            let l1 = log(-x), l2 = log(-l1)
            w = l1 - l2 + l2 / l1
        }
        for _ in 0..<64 {
            let ew = exp(w)
            let f = w * ew - x
            let step = f / (ew * (w + 1) - (w + 2) * f / (2 * w + 2))
            w -= step
            if abs(step) <= 1e-15 * abs(w) { break }
        }
        return w
    }
}
