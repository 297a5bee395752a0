import Foundation
import Testing
@testable import ConvoyGeo

/// Seeded statistical tests over ≥ 100k samples. The tolerances are several
/// standard errors wide, and the seeds fix the samples, so they cannot flake.
@Suite struct NoiseStatisticsTests {
    let truth = GeoPoint(lat: 46.05, lon: 14.5)

    /// Fraction of fixes whose true error is inside the reported 68 % radius.
    func coverage(model: AccuracyModel, devices: Int, samples: Int, dt: Double, hdop: (Double) -> Double? = { _ in nil })
        throws -> (fraction: Double, fixes: [NoisyFix]) {
        var inside = 0, total = 0
        var kept: [NoisyFix] = []
        for d in 0..<devices {
            var noise = try NoiseGenerator(model: model, seed: UInt64(d) &* 7919 &+ 1)
            for k in 0..<samples {
                let t = Double(k) * dt
                guard let fix = noise.apply(to: truth, at: t, hdop: hdop(t)) else { continue }
                total += 1
                let r = (fix.errorNorth * fix.errorNorth + fix.errorEast * fix.errorEast).squareRoot()
                if r <= fix.accuracy { inside += 1 }
                if kept.count < 50_000 { kept.append(fix) }
                // The applied error is where the fix was put.
                if k == 0 { #expect(abs(truth.distance(to: fix.position) - r) < 0.01) }
            }
        }
        return (Double(inside) / Double(total), kept)
    }

    @Test func openSkyErrorsFallInsideTheReportedRadius68PercentOfTheTime() throws {
        let (fraction, fixes) = try coverage(model: AccuracyModel(accuracy68: 5, correlationTime: 60),
                                             devices: 500, samples: 200, dt: 30)
        #expect(abs(fraction - 0.68) <= 0.02, "fraction inside = \(fraction)")
        #expect(fixes.allSatisfy { $0.accuracy == 5 && $0.source == .gps && !$0.reducedAccuracy })
    }

    /// The same holds with canyon HDOP scaling, multipath outliers and denied stretches.
    @Test func reportedAccuracyStaysConsistentUnderTheFullMixture() throws {
        let model = AccuracyModel(
            accuracy68: 4, correlationTime: 30,
            urbanCanyon: UrbanCanyon(hdopThreshold: 3, outlierProbability: 0.2, outlierAccuracy68: 50),
            denied: GPSDenied(windows: [1000...1500], meanInterval: 3000, meanDuration: 200, fallback: .cell),
            dropoutProbability: 0.05)
        let (fraction, fixes) = try coverage(model: model, devices: 250, samples: 480, dt: 10) { t in
            t.truncatingRemainder(dividingBy: 1200) < 400 ? 5 : 1
        }
        #expect(abs(fraction - 0.68) <= 0.02, "fraction inside = \(fraction)")
        let outliers = fixes.filter(\.outlier)
        let denied = fixes.filter(\.reducedAccuracy)
        #expect(!outliers.isEmpty && outliers.allSatisfy { $0.accuracy == 50 })
        #expect(!denied.isEmpty && denied.allSatisfy { $0.source == .cell && (300...600).contains($0.accuracy) })
        #expect(fixes.contains { $0.accuracy == 20 }, "HDOP 5 scales 4 m to 20 m")
    }

    @Test func dropoutsHappenAtTheConfiguredRate() throws {
        var noise = try NoiseGenerator(model: AccuracyModel(dropoutProbability: 0.1), seed: 1)
        let n = 100_000
        let missing = (0..<n).count { noise.apply(to: truth, at: Double($0), hdop: nil) == nil }
        #expect(abs(Double(missing) / Double(n) - 0.1) < 0.005)
    }

    /// First-order Gauss–Markov: autocorrelation at lag τ is e^(−1).
    @Test func gaussMarkovAutocorrelationAtLagTauIsOneOverE() throws {
        let τ = 60.0
        var num = 0.0, den = 0.0, count = 0
        for d in 0..<100 {
            var noise = try NoiseGenerator(model: AccuracyModel(accuracy68: 5, correlationTime: τ), seed: UInt64(d + 1000))
            let errors = (0..<2000).map { noise.apply(to: truth, at: Double($0), hdop: nil)!.errorNorth }
            for k in 0..<(errors.count - Int(τ)) {
                num += errors[k] * errors[k + Int(τ)]
                den += errors[k] * errors[k]
                count += 1
            }
        }
        #expect(count >= 100_000)
        let rho = num / den
        #expect(abs(rho - exp(-1)) <= 0.05, "ρ(τ) = \(rho)")
    }

    @Test func rejectsBadModels() {
        #expect(throws: GeoError.badParameter) { try NoiseGenerator(model: AccuracyModel(accuracy68: 0), seed: 1) }
        #expect(throws: GeoError.badParameter) { try NoiseGenerator(model: AccuracyModel(correlationTime: -1), seed: 1) }
        #expect(throws: GeoError.badParameter) { try NoiseGenerator(model: AccuracyModel(dropoutProbability: 2), seed: 1) }
    }
}

@Suite struct PrivacyFuzzTests {
    @Test(arguments: [2, 3])
    func generalLocationRoundsExactly(decimals: Int) throws {
        var rng = SeededGenerator(seed: 42)
        let fuzz = PrivacyFuzz.general(decimals: decimals)
        let half = 0.5 * pow(10, -Double(decimals))
        for _ in 0..<100_000 {
            let p = GeoPoint(lat: rng.uniform(-89.9, 89.9), lon: rng.uniform(-179.9, 179.9))
            let f = fuzz.apply(to: p, accuracy: 5, using: &rng)
            for (raw, rounded) in [(p.lat, f.position.lat), (p.lon, f.position.lon)] {
                // Exactly the decimal with `decimals` places nearest to the input.
                let text = String(format: "%.\(decimals)f", rounded)
                #expect(Double(text) == rounded)
                #expect("\(rounded)".split(separator: ".").last!.count <= decimals || rounded == rounded.rounded())
                #expect(abs(raw - rounded) <= half + 1e-12)
            }
            // The accuracy sent covers how far rounding really moved the point.
            #expect(p.distance(to: f.position) <= f.accuracy * (1 + 1e-6))
        }
    }

    @Test func planarLaplaceMeanOffsetIsTwoOverEpsilon() throws {
        var rng = SeededGenerator(seed: 2013)
        let ε = 0.01  // per metre: mean offset 200 m
        let p = GeoPoint(lat: 48.85, lon: 2.35)
        var sum = 0.0
        var angles = [Int](repeating: 0, count: 4)
        let n = 100_000
        for _ in 0..<n {
            let f = PrivacyFuzz.geoIndistinguishable(epsilon: ε).apply(to: p, accuracy: 5, using: &rng)
            sum += p.distance(to: f.position)
            let b = p.bearing(to: f.position)
            angles[min(3, Int(b / 90))] += 1
        }
        let mean = sum / Double(n)
        #expect(abs(mean - 2 / ε) / (2 / ε) <= 0.03, "mean offset \(mean) m")
        #expect(angles.allSatisfy { abs(Double($0) / Double(n) - 0.25) < 0.01 }, "directions uniform: \(angles)")
    }

    @Test func lambertWMinusOneInvertsWeW() {
        for x in stride(from: -1 / M_E + 1e-9, to: -1e-12, by: 0.0123) {
            let w = LambertW.minusOne(x)
            #expect(w <= -1)
            #expect(abs(w * exp(w) - x) <= 1e-12 * max(1, abs(x)))
        }
        #expect(LambertW.minusOne(-1 / M_E) == -1)
    }

    @Test func preciseIsUntouchedAndBadParametersAreRejected() throws {
        var rng = SeededGenerator(seed: 1)
        let p = GeoPoint(lat: 1.234_567_89, lon: 2.345_678_91)
        #expect(PrivacyFuzz.precise.apply(to: p, accuracy: 3, using: &rng) == FuzzedPosition(position: p, accuracy: 3))
        #expect(throws: GeoError.badParameter) { try PrivacyFuzz.general(decimals: 9).validate() }
        #expect(throws: GeoError.badParameter) { try PrivacyFuzz.geoIndistinguishable(epsilon: 0).validate() }
    }
}
