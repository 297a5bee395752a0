import Foundation

/// xoshiro256** seeded through SplitMix64: fast, small, and the same sequence on
/// every platform and Swift version (the standard library's `random(in:using:)`
/// makes no such promise, so Convoy draws its own uniforms and normals).
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var s: (UInt64, UInt64, UInt64, UInt64)
    private var spareNormal: Double?

    public init(seed: UInt64) {
        var sm = seed
        func splitMix(_ x: inout UInt64) -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s = (splitMix(&sm), splitMix(&sm), splitMix(&sm), splitMix(&sm))
    }

    /// An independent stream for one member of a population (device, friend …).
    public init(seed: UInt64, stream: UInt64) {
        self.init(seed: seed ^ (stream &* 0xD1B5_4A32_D192_ED03) &+ 0x632B_E59B_D9B4_E019)
    }

    public mutating func next() -> UInt64 {
        let result = rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotl(s.3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// Uniform in [0, 1), 53 bits.
    public mutating func uniform() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// Uniform in [a, b).
    public mutating func uniform(_ a: Double, _ b: Double) -> Double { a + (b - a) * uniform() }

    /// Standard normal (Box–Muller; the second value is kept for the next call).
    public mutating func normal() -> Double {
        if let spare = spareNormal {
            spareNormal = nil
            return spare
        }
        var u = uniform()
        while u <= .leastNormalMagnitude { u = uniform() }
        let v = uniform()
        let r = (-2 * Foundation.log(u)).squareRoot()
        spareNormal = r * Foundation.sin(2 * .pi * v)
        return r * Foundation.cos(2 * .pi * v)
    }

    public mutating func normal(mean: Double, sd: Double) -> Double { mean + sd * normal() }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { uniform() < p }
}
