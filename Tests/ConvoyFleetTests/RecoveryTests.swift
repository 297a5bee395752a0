@testable import ConvoyFleet
import ConvoyWire
import ConvoyMetrics
import Foundation
import Testing

/// The retry policy as the scenario gives it, its backoff, the accounting of
/// retried updates, and what the fleet's health says in run.log.
@Suite struct RecoveryTests {
    static func scenario(_ retry: String) throws -> Scenario {
        try ScenarioFile.parse("name: r\ngroups: [{ name: g, count: 1 }]\n\(retry)\n", file: "r.yaml")
    }

    @Test func theRetryPolicyReadsAsWrittenAndRefusesWhatCannotWork() throws {
        #expect(try Self.scenario("").retry == .none)
        #expect(try Self.scenario("retry: none").retry.mode == .none)
        let p = try Self.scenario("retry: { policy: retry, backoff: 500ms..20s, max_age: 3m, queue: 50 }").retry
        #expect(p == RetryPolicy(mode: .retry, backoff: 0.5...20, maxAge: 180, queue: 50))
        #expect(try Self.scenario("retry: { backoff: 2s..10s }").retry.mode == .retry, "a mapping means retry")
        func refused(_ text: String) -> String {
            do {
                _ = try Self.scenario(text)
                return ""
            } catch { return "\(error)" }
        }
        #expect(refused("retry: sometimes").contains("r.yaml:3:8: retry: \"sometimes\" is not one of none, retry"))
        #expect(refused("retry: { policy: none, queue: 5 }").contains("queue applies to policy: retry"))
        #expect(refused("retry: { max_age: 1s, backoff: 5s..10s }").contains("max_age is shorter than the first backoff"))
        #expect(refused("retry: { queue: 0 }").contains("0 is out of range 1…100000"))
        #expect(refused("retry: { max_ag: 1m }").contains("did you mean \"max_age\""))
    }

    @Test func backoffDoublesUpToTheLongestWithFullJitter() {
        let p = RetryPolicy(mode: .retry, backoff: 1...8, maxAge: 60, queue: 10)
        #expect(p.delay(attempt: 1, unit: 0.999) < 1 && p.delay(attempt: 1, unit: 0.5) == 0.5)
        #expect(p.delay(attempt: 2, unit: 0.5) == 1)
        #expect(p.delay(attempt: 4, unit: 0.5) == 4)
        #expect(p.delay(attempt: 9, unit: 0.5) == 4, "capped at 8 s before the jitter")
        #expect(p.delay(attempt: 60, unit: 0.5) == 4, "no overflow however many attempts")
        #expect(p.delay(attempt: 3, unit: 0) == 0.1, "never under a tenth of the first wait")
        #expect(RetryPolicy.isRetryable(status: nil) && RetryPolicy.isRetryable(status: 503) && RetryPolicy.isRetryable(status: 429))
        #expect(RetryPolicy.isRetryable(status: 401), "after the session is renewed")
        #expect(!RetryPolicy.isRetryable(status: 403) && !RetryPolicy.isRetryable(status: 400) && !RetryPolicy.isRetryable(status: 409))
    }

    @Test func updatesPostedByARetryAreDeliveredAndCountedApartAndQueueReasonsAreLosses() throws {
        var sender = DeviceLedger()
        sender.sent = [.init(seq: 1, recipients: [1], failure: nil), .init(seq: 2, recipients: [1], failure: nil, retried: true),
                       .init(seq: 3, recipients: [1], failure: "retry_expired"), .init(seq: 4, recipients: [1], failure: "retry_unsent")]
        var one = DeviceLedger()
        one.received[0] = [1, 2]
        let a = Accounting.reconcile([sender, one], duplicates: 0, sentOffline: 0)
        #expect(a.delivered == 2 && a.deliveredAfterRetry == 1)
        #expect(a.lost == ["retry_expired": 1, "retry_unsent": 1] && a.closes)
        // The shard ledger keeps the mark; a tick without it reads as before.
        let data = try JSONEncoder().encode(sender.sent)
        #expect(String(decoding: data, as: UTF8.self).contains("[2,0,[1],[],null,true]"))
        #expect(try JSONDecoder().decode([DeviceLedger.Tick].self, from: data) == sender.sent)
        let decoded = try JSONDecoder().decode(Accounting.self, from: Data(#"{"sent":1,"delivered":1,"lost":{},"duplicates":0,"sent_offline":0}"#.utf8))
        #expect(decoded.deliveredAfterRetry == 0, "an older summary.json reads")
    }

    @Test func healthSaysWhatChangedEachSecondOnce() {
        let h = FleetHealth(devices: 100)
        for d in 0..<30 { h.connected(d) }
        #expect(h.report(wall: 0).isEmpty && h.now.realtimeDown == 0)
        for d in 0..<25 { h.disconnected(d, at: 100) }
        h.disconnected(40, at: 100)  // never connected: an attempt, not a loss
        var lines = h.report(wall: 100.5)
        #expect(lines.contains("realtime: 25 phones lost the connection (25 down now)"))
        #expect(lines.contains("realtime: reconnect storm, 26 connection attempts in the last second"))
        #expect(h.now.realtimeDown == 25)
        #expect(h.report(wall: 101).isEmpty, "each event is said once")
        for d in 0..<20 { h.connected(d) }
        #expect(h.report(wall: 102) == ["realtime: 20 phones reconnected (5 still down)"])
        for d in 20..<25 { h.connected(d) }
        #expect(h.report(wall: 107.25) == ["realtime: every phone is back, 7.2 s after the first loss (25 were down at most)"])
        h.insertFailed("transport", queued: true)
        h.insertFailed("http_503", queued: true)
        h.insertFailed("http_403", queued: false)
        h.queuedBehind()
        #expect(h.now.queued == 3)
        lines = h.report(wall: 108)
        #expect(lines == ["inserts: 3 failed (http_403 1, http_503 1, transport 1); 3 updates queued for retry"])
        h.dequeued(posted: true)
        h.dequeued(posted: false, reason: "retry_expired")
        h.renewed(signedInAgain: true)
        h.renewed(signedInAgain: false)
        lines = h.report(wall: 109)
        #expect(lines == ["auth: 1 session refreshed after the backend refused a token", "auth: 1 phone signed in again (the refresh was refused)",
                          "retry: 1 queued update posted (1 still queued)", "retry: gave up 1 (retry_expired 1)"])
        h.closed(29)
        h.disconnected(29, at: 110)
        #expect(h.now.realtimeDown == 0, "a phone whose run ended is not an outage")
    }
}

/// A group's `conditions:` as the scenario gives it.
@Suite struct NetworkConditionsScenarioTests {
    static func group(_ conditions: String, network: String = "") throws -> DeviceGroup {
        try ScenarioFile.parse("name: n\ngroups:\n  - name: g\n    count: 1\n    conditions: \(conditions)\n\(network)", file: "n.yaml").groups[0]
    }

    static func refused(_ conditions: String) -> String {
        do {
            _ = try group(conditions)
            return ""
        } catch { return "\(error)" }
    }

    @Test func presetsMappingsAndTheRadioTheyImply() throws {
        let edge = try Self.group("edge")
        #expect(edge.conditions == NetworkConditions.presets["edge"] && edge.network == "3g", "edge's radio is 3G's")
        #expect(try Self.group("wifi").network == "wifi")
        #expect(try Self.group("subway", network: "    network: wifi\n").network == "wifi", "network: still names the radio")
        #expect(try ScenarioFile.parse("name: n\ngroups: [{ name: g, count: 1 }]", file: "n.yaml").groups[0].conditions == nil)
        let custom = try #require(try Self.group("{ preset: 3g, rtt: 400ms, jitter: 80ms, loss: 2%, up: 384kbit, down: 1.5 Mbit/s, resets: 2m, offline: { every: 10m, for: 45s } }").conditions)
        #expect(custom == NetworkConditions(name: "3g", rtt: 0.4, jitter: 0.08, loss: 0.02, up: 384_000, down: 1_500_000, resetEvery: 120,
                                            offline: .periodic(every: 600, for: 45)))
        let random = try #require(try Self.group("{ offline: { mean_interval: 5m, mean_duration: 1m } }").conditions)
        #expect(random.name == "lte" && random.offline == .random(meanInterval: 300, meanDuration: 60), "a mapping starts from lte")
        #expect(try Self.group("{ preset: subway, offline: none, resets: none }").conditions?.offline == nil)
        #expect(try Self.group("{ up: 750kbps, down: 0 }").conditions.map { ($0.up, $0.down) }! == (750_000, 0))
    }

    @Test func badConditionsNameTheirLineAndWhatIsWrong() {
        #expect(Self.refused("4g").contains("n.yaml:5:17: groups[0].conditions: \"4g\" is not a network preset (3g, edge, lte, subway, wifi)"))
        #expect(Self.refused("subwya").contains("did you mean \"subway\"?"))
        #expect(Self.refused("{ rtt: fast }").contains("expected a duration"))
        #expect(Self.refused("{ up: 10 furlongs }").contains("expected a bandwidth such as 2mbit"))
        #expect(Self.refused("{ up: 500bit }").contains("at least 1 kbit/s"))
        #expect(Self.refused("{ loss: 60% }").contains("at most 49%"))
        #expect(Self.refused("{ offline: { every: 1m, for: 2m } }").contains("shorter than the time between them"))
        #expect(Self.refused("{ offline: { every: 1m } }").contains("offline is {every: 5m, for: 60s}"))
        #expect(Self.refused("{ jiter: 5ms }").contains("did you mean \"jitter\"?"))
    }
}
