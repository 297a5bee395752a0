import ConvoyGeo
import ConvoySodium
import Foundation

/// One part of a fleet too big for one machine (`convoy run --shard I/N`).
/// Every shard derives the same fleet from the global seed (social graph,
/// tracks, each device's random streams) and runs its part of a seeded
/// permutation of the devices: every N-th from position I − 1, so each shard
/// gets a fair mix of groups and communities (a plain `i mod N` would line up
/// with the round-robin communities and keep every friendship on one shard).
/// Friends on different shards still pair, through the
/// backend: the shard of a pair's inviter signs in as the invitee, whose
/// password every shard derives from the run's shared secret.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// 0-based; `--shard` and the results say it 1-based.
    public let index: Int
    public let count: Int
    /// When the first device of the global arrival order arrives (Unix seconds); nil: after set-up.
    public var startAt: Double?
    /// Keys the accounts' passwords; the same on every shard.
    public var secret: [UInt8]

    public static let most = 1000

    /// Each device's shard (0-based).
    private let owner: [Int]

    /// Shard `index` of `count` of a fleet of `devices`, partitioned by `seed` (the scenario's).
    public init(index: Int, count: Int, devices: Int, seed: UInt64, startAt: Double? = nil, secret: [UInt8]) {
        precondition(count >= 1 && (0..<count).contains(index))
        (self.index, self.count, self.startAt, self.secret) = (index, count, startAt, secret)
        owner = Self.partition(devices: devices, shards: count, seed: seed)
    }

    /// Each device's shard: positions in a seeded permutation, dealt round-robin.
    public static func partition(devices n: Int, shards: Int, seed: UInt64) -> [Int] {
        var order = Array(0..<n)
        var rng = SeededGenerator(seed: seed, stream: 0x5A4D)
        SocialGraph.shuffle(&order, &rng)
        var owner = [Int](repeating: 0, count: n)
        for (k, device) in order.enumerated() { owner[device] = k % shards }
        return owner
    }

    /// `I/N`, 1-based (as Playwright's `--shard 1/3`), N at most 1,000; nil when it is not that.
    public static func parse(_ text: String) -> (index: Int, count: Int)? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), (1...most).contains(n), (1...n).contains(i) else { return nil }
        return (i - 1, n)
    }

    public var description: String { "\(index + 1)/\(count)" }

    public func owns(_ device: Int) -> Bool { owner[device] == index }

    /// This shard's devices, ascending.
    public var devices: [Int] { owner.indices.filter { owner[$0] == index } }

    /// Device `device`'s password: the same on every shard that shares `secret`.
    public func password(runID: String, device: Int) -> String {
        guard let mac = try? HMACSHA256.authenticate(Array("convoy password \(runID) \(device)".utf8), key: secret) else {
            preconditionFailure("libsodium is unavailable")
        }
        return Data(mac.prefix(18)).base64EncodedString()
    }

    /// What every shard of a run must agree on, as a short hash: the scenario as resolved (seed, groups,
    /// social graph, timeline, after the flags). `convoy merge` refuses shards whose fingerprints differ.
    public static func fingerprint(_ s: Scenario) -> String {
        var text = "\(s.name)|\(s.seed)|\(s.social.friends)|\(s.social.communities)|\(s.social.decideLater)"
        text += "|\(s.timeline.arrivalRate)|\(s.timeline.steady)|\(s.timeline.rampDown)"
        for g in s.groups { text += "|\(g.name):\(g.count):\(g.cadence):\(g.backgroundShare):\(g.preciseShare):\(g.network)" }
        return fnv(text)
    }

    static func fnv(_ text: String) -> String {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in Array(text.utf8) { h = (h ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return String(h, radix: 36)
    }

    /// A run id every shard given the same flags agrees on (`--run-id` overrides it).
    public static func derivedRunID(seed: UInt64, scenario: String, devices: Int, startAt: Double?) -> String {
        "s" + fnv("\(seed)|\(scenario)|\(devices)|\(startAt.map { String(format: "%.3f", $0) } ?? "-")")
    }

    /// The secret from `CONVOY_SHARD_SECRET`, else one derived from the run id: fine for
    /// throwaway test accounts only (anyone with the run id can sign in as them).
    public static func secret(environment: [String: String] = ProcessInfo.processInfo.environment, runID: String) -> (bytes: [UInt8], derived: Bool) {
        if let s = environment["CONVOY_SHARD_SECRET"], !s.isEmpty { return (Array(s.utf8), false) }
        return (Array("convoy shard secret \(runID)".utf8), true)
    }
}
