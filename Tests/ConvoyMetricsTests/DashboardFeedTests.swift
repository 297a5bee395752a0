@testable import ConvoyMetrics
import Foundation
import Testing

/// The live dashboard's feed: frames from each second, a bounded window, thresholds as they stand, and the
/// events pages receive.
@Suite struct DashboardFeedTests {
    static let header = DashboardFeed.Header(scenario: "s", app: "greenbox", devices: 10, planned: 100, window: 3, groups: ["a", "b"])

    static func second(_ t: Double, latencyMs: [Int] = [], totals: [String: Int] = [:], phase: String = "steady") -> DashboardFeed.Second {
        let m = Metrics()
        for v in latencyMs { m.record(.e2eLatency, microseconds: UInt64(v * 1000)) }
        m.count(.sent, by: 4)
        m.count(.received, by: 3)
        return DashboardFeed.Second(elapsed: t, phase: phase, onboarded: 10, online: 8, offRealtime: 1, retryQueued: 2, interval: m.snapshot(),
                                    totals: totals, groups: [.init(name: "a", devices: 6, online: 5, offRealtime: 1, sent: 9, received: 7)])
    }

    /// A passing run's end.
    static let end = DashboardEnd(RunSummary(scenario: "s", scenarioFile: "s.yaml", seed: 1, complete: true, startedAt: Date(), endedAt: Date(),
                                             durationSeconds: 9, target: .init(kind: "embedded", url: "http://x"), devices: 10,
                                             accounting: Accounting(), metrics: MetricsSnapshot(), thresholds: []) { _ in 0 },
                                  report: "report.html", results: "/tmp/r")

    static func decode(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func theWindowKeepsTheNewestSecondsAndTheLatestFrameHasTheirFigures() throws {
        let feed = DashboardFeed(Self.header, thresholds: [])
        for t in 1...5 { feed.publish(Self.second(Double(t), latencyMs: [10, 20, 30], totals: ["sent": 40 * t, "received": 30 * t])) }
        let state = try Self.decode(feed.state())
        let points = try #require(state["points"] as? [[String: Any]])
        #expect(points.compactMap { $0["t"] as? Double } == [3, 4, 5])
        let latest = try #require(state["latest"] as? [String: Any])
        #expect(latest["out"] as? Int == 4 && latest["in"] as? Int == 3 && latest["sent"] as? Int == 200 && latest["received"] as? Int == 150)
        #expect(latest["online"] as? Int == 8 && latest["off_realtime"] as? Int == 1 && latest["retry_queued"] as? Int == 2)
        #expect(abs((latest["p50"] as? Double ?? 0) - 20) < 0.1 && abs((latest["p99"] as? Double ?? 0) - 30) < 0.1)
        #expect(abs((latest["progress"] as? Double ?? 0) - 0.05) < 1e-9 && latest["left"] as? Double == 95)
        let groups = try #require(latest["groups"] as? [[String: Any]])
        #expect(groups.first?["name"] as? String == "a" && groups.first?["received"] as? Int == 7)
        #expect(state["end"] == nil)
    }

    @Test func thresholdsStandAsMeasuredSoFarAndLossWaitsForTheEnd() throws {
        let thresholds = try ["e2e_latency.p99 < 25ms", "e2e_latency.p50 < 1s", "delivery.loss < 1%", "decrypt_failures == 0", "seal.p99 < 1ms"].map(Threshold.init)
        let feed = DashboardFeed(Self.header, thresholds: thresholds)
        feed.publish(Self.second(1, latencyMs: [10, 20]))
        func states() throws -> [String: String] {
            let latest = try #require(try Self.decode(feed.state())["latest"] as? [String: Any])
            let list = try #require(latest["thresholds"] as? [[String: Any]])
            return Dictionary(uniqueKeysWithValues: list.map { ($0["threshold"] as! String, $0["state"] as! String) })
        }
        // Nothing received yet: no decryption could have failed, so no data rather than a pass.
        #expect(try states() == ["e2e_latency.p99 < 25ms": "passing", "e2e_latency.p50 < 1s": "passing", "delivery.loss < 1%": "at_end",
                                 "decrypt_failures == 0": "no_data", "seal.p99 < 1ms": "no_data"])
        // The latency histogram accumulates over seconds: a slow second makes p99 fail from then on, whatever comes next.
        feed.publish(Self.second(2, latencyMs: Array(repeating: 400, count: 50), totals: ["decrypt_failures": 1]))
        feed.publish(Self.second(3, latencyMs: [10], totals: ["received": 30]))
        #expect(try states()["e2e_latency.p99 < 25ms"] == "failing")
        #expect(try states()["decrypt_failures == 0"] == "passing", "counters are the totals of the latest second")
        feed.publish(Self.second(4, totals: ["decrypt_failures": 1]))
        #expect(try states()["decrypt_failures == 0"] == "failing")
    }

    /// An app of actions alone (a declared app sharing no locations, Naar's Cars) is drawn by its actions, not as a
    /// mailbox at zero: made and succeeded, the most-made action's latency, its counters in the app's table and its
    /// failures by action among the errors. The control: a mailbox app's header (no actions) keeps the mailbox's figures.
    @Test func anAppOfActionsAloneIsDrawnByItsActions() throws {
        let actions = DashboardFeed.Header(scenario: "s", app: "naarscars", devices: 4, planned: 100, sharesLocations: false, groups: ["a"],
                                           actions: ["ride_post", "message_send"])
        let m = Metrics()
        m.count(.mailboxSent, by: 9)
        for v in [10, 20, 30] { m.record(HistogramName("message_send"), microseconds: UInt64(v * 1000)) }
        m.record(HistogramName("ride_post"), microseconds: 900_000)
        var second = Self.second(1)
        second.interval = m.snapshot()
        second.interval.counters["actions.message_send"] = 3
        second.interval.counters["actions.ride_post"] = 1
        second.totals = ["actions.message_send": 30, "actions.ride_post": 4, "action_failures.ride_post": 2, "action_skipped.ride_post": 1,
                         "mailbox_sent": 9]
        let frame = try Self.decode(JSONEncoder().encode(DashboardFeed.frame(second, header: actions, thresholds: [], measured: second.interval)))
        #expect(frame["sent"] as? Int == 34 && frame["received"] as? Int == 32 && frame["out"] as? Int == 4 && frame["in"] as? Int == 4)
        #expect(frame["latency"] as? String == "message_send" && abs((frame["p50"] as? Double ?? 0) - 20) < 0.1, "\(frame)")
        let app = try #require(frame["app"] as? [String: Int]), errors = try #require(frame["errors"] as? [String: Int])
        #expect(app == ["actions.message_send": 30, "actions.ride_post": 4, "action_skipped.ride_post": 1, "mailbox_sent": 9] && errors == ["action_failures.ride_post": 2])

        let mailbox = DashboardFeed.Header(scenario: "s", app: "quickpic", devices: 4, planned: 100, sharesLocations: false, groups: ["a"])
        let control = try Self.decode(JSONEncoder().encode(DashboardFeed.frame(second, header: mailbox, thresholds: [], measured: second.interval)))
        #expect(control["sent"] as? Int == 9 && control["latency"] as? String == "mailbox_latency", "\(control)")
    }

    @Test func errorsAreByKindWithAFamilysBreakdownInsteadOfItsTotal() {
        let errors = DashboardFeed.errorsByKind(["http_errors": 5, "http_errors.503": 3, "http_errors.429": 2, "transport_errors.timeout": 1,
                                                 "key_lookup_failures": 2, "seal_failures": 0, "messages_failed": 1, "sent": 100])
        #expect(errors == ["http_errors.503": 3, "http_errors.429": 2, "transport_errors.timeout": 1, "key_lookup_failures": 2, "messages_failed": 1])
    }

    @Test func pagesGetEachSecondThenTheEndAndALatePageTheEndAlone() async throws {
        let feed = DashboardFeed(Self.header, thresholds: [])
        let (after, events) = feed.listen()
        #expect(feed.listeners == 1 && after == 0)
        feed.publish(Self.second(1))
        feed.publish(Self.second(2))
        feed.finish(Self.end)
        var received: [String] = []
        for await e in events { received.append(e.text) }
        #expect(received.count == 3 && received[0].hasPrefix("id: 1\nevent: tick\ndata: {") && received[2].hasPrefix("id: 3\nevent: end\ndata: {"))
        #expect(received.allSatisfy { $0.hasSuffix("\n\n") })
        #expect(feed.listeners == 0)
        var late: [String] = []
        for await e in feed.listen().events { late.append(e.text) }
        #expect(late.count == 1 && late[0].contains("\"exit_code\":0"))
        feed.publish(Self.second(3))
        #expect((try Self.decode(feed.state())["points"] as? [Any])?.count == 2, "nothing is published after the end")
    }

    @Test func aPageThatReadsNothingHoldsOnlyTheNewestFewEvents() async {
        let feed = DashboardFeed(Self.header, thresholds: [])
        let events = feed.listen().events
        for t in 1...50 { feed.publish(Self.second(Double(t))) }
        feed.finish(Self.end)
        var received: [String] = []
        for await e in events { received.append(e.text) }
        #expect(received.count == 4 && received.last?.contains("event: end") == true)
        #expect(received.first?.contains("\"t\":48") == true, "the oldest kept is three seconds before the end")
    }

    /// At most `atMost` pages listen at once; one that goes frees its place; after the end every page gets the end.
    @Test func listenersAreCappedAndAPlaceFreesWhenOneGoes() async {
        let feed = DashboardFeed(Self.header, thresholds: [])
        var first = feed.listen(atMost: 2)
        let second = feed.listen(atMost: 2)
        #expect(first != nil && second != nil && feed.listeners == 2)
        #expect(feed.listen(atMost: 2) == nil && feed.listeners == 2, "a third is not let in")
        let third = feed.listen(atMost: 3)
        #expect(third != nil && feed.listeners == 3, "the cap is the caller's")
        first = nil  // the page goes: its stream is dropped
        #expect(feed.listeners == 2)
        let fourth = feed.listen(atMost: 3)
        #expect(fourth != nil && feed.listeners == 3)
        feed.finish(Self.end)
        var ended: [String] = []
        for await e in feed.listen(atMost: 0)!.events { ended.append(e.name) }
        #expect(ended == ["end"], "after the end the cap does not matter: nothing is held")
        _ = (second, third, fourth)
    }

    /// A listener that fell behind is told what it skipped, and once the run has ended goes straight to the end; one
    /// that keeps up is told nothing (the control).
    @Test func aListenerThatFellBehindIsToldWhatItSkippedAndReachesTheEnd() async {
        let feed = DashboardFeed(Self.header, thresholds: [])
        feed.publish(Self.second(1))
        let (after, slow) = feed.listen()
        let (_, fast) = feed.listen()
        #expect(after == 1)
        var keeping = DashboardFeed.CatchingUp(after: after), kept: [String] = []
        var fastEvents = fast.makeAsyncIterator()
        for t in 2...30 {
            feed.publish(Self.second(Double(t)))
            if let e = await fastEvents.next(), let text = keeping.text(for: e, ended: feed.end != nil) { kept.append(text) }
        }
        // Behind while the run goes on: the newest four waited, the 25 before them were dropped; the first one read says so.
        var reader = DashboardFeed.CatchingUp(after: after), read: [String] = []
        var slowEvents = slow.makeAsyncIterator()
        if let e = await slowEvents.next(), let text = reader.text(for: e, ended: feed.end != nil) { read.append(text) }
        #expect(read.first?.hasPrefix("event: skipped\ndata: {\"skipped\":25,\"seq\":27}\n\nid: 27\nevent: tick") == true, "\(read)")
        // The run ends with three seconds still waiting: they are skipped, and the end says how many.
        feed.finish(Self.end)
        while let e = await slowEvents.next() { if let text = reader.text(for: e, ended: feed.end != nil) { read.append(text) } }
        #expect(read.count == 2 && read[1].hasPrefix("event: skipped\ndata: {\"skipped\":3,\"seq\":31}\n\nid: 31\nevent: end"), "\(read)")
        #expect(reader.skipped == 28)
        while let e = await fastEvents.next() { if let text = keeping.text(for: e, ended: feed.end != nil) { kept.append(text) } }
        #expect(kept.count == 30 && !kept.contains { $0.contains("event: skipped") } && keeping.skipped == 0)
    }

    /// `/api/map`'s bytes: encoded once per published second however many readers ask, gzipped once for all that accept
    /// it; a new second (or the end) makes them again.
    @Test func theMapIsMadeOncePerSecondForEveryReader() {
        let feed = DashboardFeed(Self.header, thresholds: [])
        let bytes = DashboardBytes(compress: { Array($0.reversed()) })
        var made = 0
        func read(gzip: Bool) -> (body: [UInt8], gzip: Bool) {
            let key = DashboardBytes.key(feed)
            if let hit = bytes.cached(for: key, gzip: gzip) { return hit }
            made += 1
            return bytes.store(Array("map \(feed.published)".utf8), for: key, gzip: gzip)
        }
        feed.publish(Self.second(1))
        let first = (0..<30).map { i in read(gzip: i % 3 == 0) }
        #expect(made == 1 && bytes.encodes == 1 && bytes.compressions == 1)
        #expect(first.allSatisfy { $0.gzip ? $0.body == Array("map 1".utf8.reversed()) : $0.body == Array("map 1".utf8) })
        feed.publish(Self.second(2))
        #expect(read(gzip: false).body == Array("map 2".utf8) && read(gzip: false).body == Array("map 2".utf8) && bytes.encodes == 2)
        #expect(bytes.compressions == 1, "no reader of this second asked for gzip")
        feed.finish(Self.end)
        _ = read(gzip: true)
        #expect(bytes.encodes == 3 && bytes.compressions == 2, "the end draws the map once more")
        // A compressor that cannot: the plain bytes, said so.
        let plainOnly = DashboardBytes(compress: { _ in nil })
        let plain = plainOnly.store([1, 2], for: 0, gzip: true)
        #expect(plain.body == [1, 2] && !plain.gzip)
    }
}
