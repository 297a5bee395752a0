@testable import ConvoyFleet
import ConvoyMetrics
import ConvoyWire
import Foundation
import Testing

/// `--shard I/N`'s partition and passwords, and `ledger.json`'s reconciliation across shards.
@Suite struct ShardTests {
    /// A reinstall runs sharded when the phones pair on their own (each friend, on whichever shard, hears the request again);
    /// with invite codes the run would accept for a friend on another shard, and is refused, saying why.
    @Test func aShardedReinstallNeedsPhonesThatPairOnTheirOwn() throws {
        func refusal(_ app: String) throws -> String {
            let scenario = try FleetRunTests.scenario(devices: 4, extra: "\(app)migration: { share: 25% }")
            let configuration = FleetRun.Configuration(scenario: scenario, scenarioFile: "s.yaml", target: SupabaseTarget(url: "http://127.0.0.1", anonKey: ""),
                                                       runID: "x", shard: Shard(index: 0, count: 2, devices: 4, seed: 1, secret: Array("s".utf8)))
            do {
                try FleetRun(configuration, engine: try HTTPEngine(), logger: .quiet).checkRunnable()
                return "runnable"
            } catch {
                return "\(error)"
            }
        }
        #expect(try refusal("app: { name: greenbox, pairing: prd }\n") == "runnable")
        let codes = try refusal("")
        #expect(codes.contains("cannot reinstall devices whose friends accept invite codes"), "\(codes)")
    }

    @Test func parsesOneBasedShards() {
        #expect(Shard.parse("1/1")! == (0, 1))
        #expect(Shard.parse("3/4")! == (2, 4))
        for bad in ["0/2", "3/2", "1/0", "1/1001", "a/b", "1/", "/2", "1/2/3", ""] { #expect(Shard.parse(bad) == nil, "\(bad)") }
    }

    @Test func thePartitionIsBalancedDeterministicAndMixesCommunities() throws {
        let n = 101, shards = 4
        let owner = Shard.partition(devices: n, shards: shards, seed: 42)
        #expect(owner == Shard.partition(devices: n, shards: shards, seed: 42))
        #expect(owner != Shard.partition(devices: n, shards: shards, seed: 43))
        let sizes = (0..<shards).map { s in owner.filter { $0 == s }.count }
        #expect(sizes.max()! - sizes.min()! <= 1 && sizes.reduce(0, +) == n, "\(sizes)")
        let parts = (0..<shards).map { Shard(index: $0, count: shards, devices: n, seed: 42, secret: []).devices }
        #expect(Set(parts.flatMap { $0 }) == Set(0..<n) && parts.flatMap { $0 }.count == n)
        // With round-robin communities, i mod N would keep every friendship on one shard; this does not.
        let graph = SocialGraph(devices: n, social: Social(friends: 2...4, communities: 2, decideLater: 0), seed: 42)
        let across = graph.pairs.filter { owner[$0.inviter] != owner[$0.invitee] }.count
        #expect(across > graph.pairs.count / 2, "\(across) of \(graph.pairs.count) friendships cross shards")
    }

    @Test func passwordsAgreeAcrossShardsAndDependOnTheSecretRunAndDevice() {
        let a = Shard(index: 0, count: 2, devices: 10, seed: 1, secret: Array("s".utf8))
        let b = Shard(index: 1, count: 2, devices: 10, seed: 1, secret: Array("s".utf8))
        let c = Shard(index: 1, count: 2, devices: 10, seed: 1, secret: Array("t".utf8))
        #expect(a.password(runID: "r", device: 3) == b.password(runID: "r", device: 3))
        #expect(a.password(runID: "r", device: 3) != c.password(runID: "r", device: 3))
        #expect(a.password(runID: "r", device: 3) != a.password(runID: "q", device: 3))
        #expect(a.password(runID: "r", device: 3) != a.password(runID: "r", device: 4))
        #expect(a.password(runID: "r", device: 3).count == 24)
        #expect(Shard.derivedRunID(seed: 1, scenario: "x", devices: 10, startAt: 5) == Shard.derivedRunID(seed: 1, scenario: "x", devices: 10, startAt: 5))
        #expect(Shard.derivedRunID(seed: 1, scenario: "x", devices: 10, startAt: 5) != Shard.derivedRunID(seed: 1, scenario: "x", devices: 10, startAt: 6))
        #expect(Shard.secret(environment: ["CONVOY_SHARD_SECRET": "k"], runID: "r") == (Array("k".utf8), false))
        #expect(Shard.secret(environment: [:], runID: "r").derived)
    }

    /// Device 0 on shard 1 sends to device 1 on shard 2 (online from t = 100) and device 2 on shard 1.
    static func ledgers() -> [ShardLedger] {
        var d0 = DeviceLedger()
        d0.sent = [.init(seq: 1, recipients: [], failure: nil, wall: 90, remote: [1]),    // 1 not online yet: offline
                   .init(seq: 2, recipients: [2], failure: nil, wall: 110, remote: [1]),  // both expected; 1 received it
                   .init(seq: 3, recipients: [2], failure: "http_500", wall: 120, remote: [1]),
                   .init(seq: 4, recipients: [], failure: nil, wall: 200, remote: [1])]   // 1 gone at 150: offline
        var d1 = DeviceLedger()
        d1.online = [.init(from: 100, to: 150)]
        d1.received = [0: [1, 2]]  // 1 arrived anyway (a backfill): still offline when sent, not counted
        var d2 = DeviceLedger()
        d2.online = [.init(from: 0)]
        d2.received = [0: [2]]
        d2.decryptFailures = [0: 1]
        return [
            ShardLedger(runID: "r", shard: 1, shards: 2, fleet: 3, devices: [
                .init(index: 0, group: "g", ledger: d0, duplicates: 1, sentOffline: 0, batteryPercentPerHour: 10),
                .init(index: 2, group: "g", ledger: d2, duplicates: 0, sentOffline: 2, batteryPercentPerHour: 12),
            ]),
            ShardLedger(runID: "r", shard: 2, shards: 2, fleet: 3, devices: [
                .init(index: 1, group: "h", ledger: d1, duplicates: 0, sentOffline: 0, batteryPercentPerHour: nil),
            ]),
        ]
    }

    @Test func mergeDecidesFriendsOnOtherShardsByTheirOnlineSpans() {
        let (a, battery) = ShardLedger.reconcile(Self.ledgers())
        // Expected: seq 2 → 2 and 1, seq 3 → 2 and 1 (failed insert).
        #expect(a.sent == 4)
        #expect(a.delivered == 2)
        #expect(a.lost == ["http_500": 2])
        #expect(a.sentOffline == 2 + 2)
        #expect(a.duplicates == 1)
        #expect(a.closes)
        #expect(battery == ["g": [10, 12]])
    }

    @Test func theLedgerFileRoundTripsWithRangesAndOpenSpans() throws {
        var l = Self.ledgers()
        l[1].devices[0].ledger.received = [0: Set([1, 2, 3, 7, 9, 10])]
        l[1].devices[0].ledger.online = [.init(from: 100, to: 150), .init(from: 160)]
        let data = try l[1].json()
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("[[1,3],[7,7],[9,10]]"), "\(text)")
        #expect(text.contains("[160,null]"), "\(text)")
        let back = try JSONDecoder().decode(ShardLedger.self, from: data)
        #expect(back.devices[0].ledger.received == l[1].devices[0].ledger.received)
        #expect(back.devices[0].ledger.online == l[1].devices[0].ledger.online)
        let first = try JSONDecoder().decode(ShardLedger.self, from: try l[0].json())
        #expect(first.devices[0].ledger.sent == l[0].devices[0].ledger.sent)
        #expect(first.devices[1].ledger.decryptFailures == [0: 1])
        // Device 1 came back at 160: seq 4 (sent at 200) is now expected there too.
        #expect(ShardLedger.reconcile([first, back]).accounting.sent == 5)
    }

    @Test func aDamagedLedgerIsNamed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-ledger-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("ledger.json").path
        for (text, says) in [("{", "not a convoy.shard.ledger"),
                             (#"{"schema":"convoy.shard.ledger","version":1,"run_id":"r","shard":3,"shards":2,"fleet":1,"devices":[]}"#, "shard 3 of 2"),
                             (#"{"schema":"other","version":1,"run_id":"r","shard":1,"shards":2,"fleet":1,"devices":[]}"#, "expected convoy.shard.ledger")] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: file))
            #expect(throws: ShardLedger.Failure.self) { try ShardLedger.load(file) }
            do { _ = try ShardLedger.load(file) } catch { #expect(error.description.contains(file) && error.description.contains(says), "\(error)") }
        }
    }
}
