import ConvoyMetrics
import Foundation

/// `ledger.json`: what each of a shard's devices sent and what it made of what
/// it received, so that `convoy merge` can account for updates whose sender
/// and recipient ran on different shards. Sequence-number sets are written as
/// ranges (a device's are mostly consecutive), ticks as compact arrays.
public struct ShardLedger: Codable, Sendable {
    public static let schemaName = "convoy.shard.ledger"
    public static let currentVersion = 1

    public var schema = ShardLedger.schemaName
    public var version = ShardLedger.currentVersion
    public var runID: String
    /// 1-based, as `--shard` says it.
    public var shard: Int
    public var shards: Int
    /// Devices in the whole fleet.
    public var fleet: Int
    public var devices: [Device]

    public struct Device: Codable, Sendable {
        public var index: Int
        public var group: String
        var ledger: DeviceLedger
        public var duplicates: Int
        public var sentOffline: Int
        /// The battery model's % of capacity per hour for this device (nil: not modelled).
        public var batteryPercentPerHour: Double?

        init(index: Int, group: String, ledger: DeviceLedger, duplicates: Int, sentOffline: Int, batteryPercentPerHour: Double?) {
            (self.index, self.group, self.ledger) = (index, group, ledger)
            (self.duplicates, self.sentOffline, self.batteryPercentPerHour) = (duplicates, sentOffline, batteryPercentPerHour)
        }

        enum CodingKeys: String, CodingKey {
            case index, group, duplicates, sent, received, stale, expired, backfilled, online
            case sentOffline = "sent_offline"
            case batteryPercentPerHour = "battery_pct_per_h"
            case decryptFailures = "decrypt_failures"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            index = try c.decode(Int.self, forKey: .index)
            group = try c.decode(String.self, forKey: .group)
            duplicates = try c.decode(Int.self, forKey: .duplicates)
            sentOffline = try c.decode(Int.self, forKey: .sentOffline)
            batteryPercentPerHour = try c.decodeIfPresent(Double.self, forKey: .batteryPercentPerHour)
            ledger = DeviceLedger()
            ledger.sent = try c.decode([DeviceLedger.Tick].self, forKey: .sent)
            func sets(_ key: CodingKeys) throws -> [Int32: Set<UInt64>] {
                try c.decode([String: [[UInt64]]].self, forKey: key).reduce(into: [:]) { out, entry in
                    guard let sender = Int32(entry.key) else {
                        throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "sender \"\(entry.key)\" is not a device index")
                    }
                    out[sender] = try Self.set(entry.value, key: key, in: c)
                }
            }
            ledger.received = try sets(.received)
            ledger.stale = try sets(.stale)
            ledger.expired = try sets(.expired)
            ledger.backfilled = try sets(.backfilled)
            ledger.decryptFailures = Dictionary(uniqueKeysWithValues: try c.decode([String: Int].self, forKey: .decryptFailures).compactMap { k, v in
                Int32(k).map { ($0, v) }
            })
            ledger.online = try c.decode([[Double?]].self, forKey: .online).map { span in
                guard span.count == 2, let from = span[0] else {
                    throw DecodingError.dataCorruptedError(forKey: .online, in: c, debugDescription: "a span is [from, to or null]")
                }
                return DeviceLedger.Span(from: from, to: span[1] ?? .infinity)
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(index, forKey: .index)
            try c.encode(group, forKey: .group)
            try c.encode(duplicates, forKey: .duplicates)
            try c.encode(sentOffline, forKey: .sentOffline)
            try c.encodeIfPresent(batteryPercentPerHour, forKey: .batteryPercentPerHour)
            try c.encode(ledger.sent, forKey: .sent)
            func sets(_ s: [Int32: Set<UInt64>], _ key: CodingKeys) throws {
                try c.encode(Dictionary(uniqueKeysWithValues: s.map { (String($0.key), Self.ranges($0.value)) }), forKey: key)
            }
            try sets(ledger.received, .received)
            try sets(ledger.stale, .stale)
            try sets(ledger.expired, .expired)
            try sets(ledger.backfilled, .backfilled)
            try c.encode(Dictionary(uniqueKeysWithValues: ledger.decryptFailures.map { (String($0.key), $0.value) }), forKey: .decryptFailures)
            try c.encode(ledger.online.map { [$0.from, $0.to.isFinite ? $0.to : nil] }, forKey: .online)
        }

        /// A set of sequence numbers as sorted, inclusive [first, last] ranges.
        static func ranges(_ set: Set<UInt64>) -> [[UInt64]] {
            var out: [[UInt64]] = []
            for v in set.sorted() {
                if let last = out.last, last[1] &+ 1 == v { out[out.count - 1][1] = v } else { out.append([v, v]) }
            }
            return out
        }

        static func set(_ ranges: [[UInt64]], key: CodingKeys, in c: KeyedDecodingContainer<CodingKeys>) throws -> Set<UInt64> {
            var out = Set<UInt64>()
            for r in ranges {
                guard r.count == 2, r[0] <= r[1], r[1] - r[0] < 10_000_000 else {
                    throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "a range is [first, last] with first ≤ last")
                }
                out.formUnion(r[0]...r[1])
            }
            return out
        }
    }

    enum CodingKeys: String, CodingKey {
        case schema, version, shard, shards, fleet, devices
        case runID = "run_id"
    }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(self)
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads `file`; a file that is not a shard ledger this version can read is named in the error.
    public static func load(_ file: String) throws(Failure) -> ShardLedger {
        guard let data = FileManager.default.contents(atPath: file) else { throw Failure(description: "\(file): not found (was the run sharded?)") }
        let ledger: ShardLedger
        do {
            ledger = try JSONDecoder().decode(ShardLedger.self, from: data)
        } catch {
            throw Failure(description: "\(file): not a \(schemaName) v\(currentVersion): \(error)")
        }
        guard ledger.schema == schemaName, ledger.version == currentVersion else {
            throw Failure(description: "\(file): \(ledger.schema) v\(ledger.version), expected \(schemaName) v\(currentVersion)")
        }
        guard ledger.shards >= 1, ledger.fleet >= 0, (1...ledger.shards).contains(ledger.shard) else {
            throw Failure(description: "\(file): shard \(ledger.shard) of \(ledger.shards) (fleet \(ledger.fleet)) is not a shard")
        }
        let fleet = 0..<ledger.fleet
        for d in ledger.devices {
            let l = d.ledger
            let senders = [l.received, l.stale, l.expired, l.backfilled].flatMap(\.keys) + Array(l.decryptFailures.keys)
            guard fleet.contains(d.index), senders.allSatisfy({ fleet.contains(Int($0)) }),
                  l.sent.allSatisfy({ ($0.recipients + $0.remote).allSatisfy { fleet.contains(Int($0)) } }) else {
                throw Failure(description: "\(file): device \(d.index) names devices outside the fleet's 0..<\(ledger.fleet)")
            }
        }
        return ledger
    }

    /// A device that more than one of `shards` ran (the ledgers are of different partitions), if any.
    public static func overlap(_ shards: [ShardLedger]) -> (device: Int, shards: [Int])? {
        var ranOn: [Int: Int] = [:]
        for s in shards {
            for d in s.devices {
                if let other = ranOn.updateValue(s.shard, forKey: d.index) { return (d.index, [other, s.shard]) }
            }
        }
        return nil
    }

    /// What the shards' devices did, accounted for as one run: a tick's update to
    /// a friend on another shard is expected if that friend was online when it
    /// was sent (its own shard's record says), and counted `sent_offline` otherwise,
    /// as a single process decides it at the time.
    public static func reconcile(_ shards: [ShardLedger]) -> (accounting: Accounting, batteryByGroup: [String: [Double]]) {
        let fleet = shards.map(\.fleet).max() ?? 0
        var ledgers = [DeviceLedger](repeating: DeviceLedger(), count: fleet)
        var duplicates = 0, offline = 0
        var battery: [String: [Double]] = [:]
        for shard in shards {
            for d in shard.devices {
                ledgers[d.index] = d.ledger
                duplicates += d.duplicates
                offline += d.sentOffline
                if let p = d.batteryPercentPerHour { battery[d.group, default: []].append(p) }
            }
        }
        let online = ledgers.map(\.online)
        for i in ledgers.indices {
            for k in ledgers[i].sent.indices where !ledgers[i].sent[k].remote.isEmpty {
                let tick = ledgers[i].sent[k]
                for r in tick.remote {
                    if online[Int(r)].contains(where: { $0.from <= tick.wall && tick.wall < $0.to }) {
                        ledgers[i].sent[k].recipients.append(r)
                    } else {
                        offline += 1
                    }
                }
                ledgers[i].sent[k].remote = []
            }
        }
        return (Accounting.reconcile(ledgers, duplicates: duplicates, sentOffline: offline), battery)
    }
}

extension DeviceLedger.Tick: Codable {
    /// `[seq, wall, [recipients], [remote], failure or null]`, and `true` after those when a retry posted it.
    init(from decoder: any Decoder) throws {
        var c = try decoder.unkeyedContainer()
        seq = try c.decode(UInt64.self)
        wall = try c.decode(Double.self)
        recipients = try c.decode([Int32].self)
        remote = try c.decode([Int32].self)
        failure = try c.decodeIfPresent(String.self)
        if !c.isAtEnd { retried = try c.decode(Bool.self) }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.unkeyedContainer()
        try c.encode(seq)
        try c.encode(wall)
        try c.encode(recipients)
        try c.encode(remote)
        if let failure { try c.encode(failure) } else { try c.encodeNil() }
        if retried { try c.encode(true) }
    }
}
