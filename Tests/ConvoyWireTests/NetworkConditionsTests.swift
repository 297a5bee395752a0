import ConvoyServer
@testable import ConvoyWire
import Foundation
import Logging
import Testing

/// A phone's link under network conditions (times injected), and the shaping
/// proxy carrying HTTP and Realtime to a real `convoy serve`.
@Suite struct NetworkConditionsTests {
    @Test func bytesWaitForTheQueueHalfTheRoundTripAndNeverOvertake() {
        let link = NetworkLink(conditions: NetworkConditions(rtt: 0.2, up: 1e6, down: 8e6), phone: 1, seed: 1)
        #expect(link.arrival(of: 125_000, at: 5, direction: .up, after: 0) == 5, "before the phone arrives the link is transparent")
        link.begin(at: 10)
        // 125,000 bytes at 1 Mbit/s take 1 s; the next chunk queues behind it.
        #expect(abs(link.arrival(of: 125_000, at: 10, direction: .up, after: 0) - 11.1) < 1e-9)
        #expect(abs(link.arrival(of: 125_000, at: 10.5, direction: .up, after: 0) - 12.1) < 1e-9)
        // The other direction has its own queue and bandwidth.
        #expect(abs(link.arrival(of: 125_000, at: 10, direction: .down, after: 0) - 10.225) < 1e-9)
        // A chunk never arrives before the connection's previous one (TCP does not reorder).
        #expect(link.arrival(of: 1, at: 20, direction: .down, after: 30) == 30)
        #expect(link.handshake == 0.2)
    }

    @Test func lostSegmentsCostARetransmissionTimeoutAndJitterStaysWithinItsBounds() {
        let lossy = NetworkLink(conditions: NetworkConditions(rtt: 0.1, loss: 0.3), phone: 2, seed: 9)
        lossy.begin(at: 0)
        var delays: [Double] = []
        for i in 0..<2_000 { delays.append(lossy.arrival(of: 100, at: Double(i), direction: .up, after: 0) - Double(i)) }
        let late = delays.filter { $0 > 0.05 + 1e-9 }
        #expect(delays.allSatisfy { abs($0 - 0.05) < 1e-9 || $0 >= 0.25 - 1e-9 }, "half the round trip, or that and a 200 ms RTO or more")
        #expect(Double(late.count) / 2_000 > 0.25 && Double(late.count) / 2_000 < 0.35, "about 30 % of one-segment chunks: \(late.count)")
        let jittery = NetworkLink(conditions: NetworkConditions(rtt: 0.1, jitter: 0.02), phone: 3, seed: 9)
        jittery.begin(at: 0)
        let spread = (0..<1_000).map { jittery.arrival(of: 10, at: Double($0), direction: .down, after: 0) - Double($0) }
        #expect(spread.allSatisfy { $0 >= 0.03 - 1e-9 && $0 <= 0.07 + 1e-9 } && Set(spread).count > 100)
    }

    @Test func periodicTunnelsLastTheirLengthAtEachPhonesOwnPhaseAndCutConnectionsOnce() {
        let conditions = NetworkConditions(offline: .periodic(every: 300, for: 60))
        var phases = Set<Int>()
        for phone in 0..<20 {
            let link = NetworkLink(conditions: conditions, phone: phone, seed: 4)
            link.begin(at: 1_000)
            let offline = stride(from: 1_000.0, to: 4_000, by: 1).filter { link.isOffline(at: $0) }
            #expect(offline.count == 600, "ten windows of 60 s in 3,000 s: \(offline.count)")
            phases.insert(Int(offline[0]) % 300)
            // The sweep sees each window's start once.
            var cuts = 0
            for t in stride(from: 1_000.0, to: 4_000, by: 0.1) where link.cut(at: t) { cuts += 1 }
            #expect(cuts >= 9 && cuts <= 10)
        }
        #expect(phases.count > 10, "phones enter their tunnels at their own phases")
        let same = (NetworkLink(conditions: conditions, phone: 7, seed: 4), NetworkLink(conditions: conditions, phone: 7, seed: 4))
        same.0.begin(at: 0)
        same.1.begin(at: 0)
        #expect((0..<900).map { same.0.isOffline(at: Double($0)) } == (0..<900).map { same.1.isOffline(at: Double($0)) }, "seeded")
    }

    @Test func aSpanOfTimeGivesItsOfflineWindowsClippedToIt() {
        let link = NetworkLink(conditions: NetworkConditions(offline: .periodic(every: 300, for: 60)), phone: 3, seed: 4)
        #expect(link.offlineSpans(from: 0, to: 1_000).isEmpty, "nothing before it arrives")
        link.begin(at: 1_000)
        let spans = link.offlineSpans(from: 1_100, to: 2_350)
        let seconds = spans.reduce(0.0) { $0 + $1.end - $1.start }
        let counted = stride(from: 1_100.0, to: 2_350, by: 0.5).filter { link.isOffline(at: $0) }.count
        #expect(abs(seconds - Double(counted) / 2) <= 1, "\(seconds) s in spans, \(Double(counted) / 2) s sampled offline")
        #expect(spans.allSatisfy { $0.start >= 1_100 && $0.end <= 2_350 && $0.start < $0.end })
        #expect(zip(spans, spans.dropFirst()).allSatisfy { $0.end <= $1.start }, "in order, apart")
    }

    @Test func randomWindowsAndResetsFollowTheirMeans() {
        let link = NetworkLink(conditions: NetworkConditions(resetEvery: 60, offline: .random(meanInterval: 240, meanDuration: 60)), phone: 5, seed: 8)
        link.begin(at: 0)
        let hours = 100.0
        let offline = stride(from: 0.0, to: hours * 3_600, by: 5).filter { link.isOffline(at: $0) }.count
        let share = Double(offline) * 5 / (hours * 3_600)
        #expect(share > 0.15 && share < 0.25, "offline about 60 / (240 + 60) of the time: \(share)")
        let resets = NetworkLink(conditions: NetworkConditions(resetEvery: 60), phone: 6, seed: 8)
        resets.begin(at: 0)
        var cuts = 0
        for t in stride(from: 1.0, through: 36_000, by: 1) where resets.cut(at: t) { cuts += 1 }
        #expect(cuts > 500 && cuts < 700, "a reset every 60 s on average for 10 h: \(cuts)")
    }

    @Test func thePresetsSayWhatTheyAre() {
        #expect(NetworkConditions.presets["3g"]?.summary == "3g: rtt 250 ms ± 50, loss 0.5 %, up 1.2 Mbit/s, down 1.2 Mbit/s")
        #expect(NetworkConditions.presets["subway"]?.summary
            == "subway: rtt 45 ms ± 10, loss 0.2 %, up 50 Mbit/s, down 100 Mbit/s, a reset every 3 min on average, offline 1 min every 5 min")
        #expect(Set(NetworkConditions.presets.keys) == ["lte", "3g", "edge", "wifi", "subway"])
        #expect(NetworkConditions.presets.keys.allSatisfy { NetworkConditions.radio(forPreset: $0) != nil })
    }

    /// HTTP (libcurl through a CONNECT tunnel) and Realtime (RealtimeSocket's own CONNECT) through the proxy to a real server:
    /// what goes through takes at least the round trips it must, and an offline phone gets nothing through.
    @Test func httpAndRealtimeGoThroughThePhonesLinkAndNotWhileOffline() async throws {
        let server = try await HTTPEngineTests.server()
        let keys = server.keys
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let slow = NetworkLink(conditions: NetworkConditions(rtt: 0.3), phone: 1, seed: 1)
        let tunnel = NetworkLink(conditions: NetworkConditions(offline: .periodic(every: 3_600, for: 3_599)), phone: 2, seed: 1)
        let proxy = try await ShapingProxy.start(links: [1: slow, 2: tunnel], logger: logger)
        let engine = try HTTPEngine()
        let phone = try HTTPConnection(engine: engine, proxy: proxy.tunnel(for: 1))
        // Before the phone arrives (set-up): through the tunnel, not shaped.
        #expect(try await engine.send(HTTPEngineTests.get(keys, "/rest/v1/users"), on: phone).status == 200)
        slow.begin(at: ShapingProxy.now())
        let started = ShapingProxy.now()
        let answer = try await engine.send(HTTPEngineTests.get(keys, "/rest/v1/users"), on: phone)
        #expect(answer.status == 200)
        #expect(ShapingProxy.now() - started >= 0.3, "a request and its response: one round trip at least")
        #expect(proxy.figures(phones: [1]).tunnels >= 1)

        // Realtime through the same link.
        let realtime = RealtimeClient(url: SupabaseTarget(url: keys.url, anonKey: keys.anonKey).realtimeURL, accessToken: keys.anonKey,
                                      proxy: proxy.tunnel(for: 1))
        let running = Task { await realtime.run() }
        var events = realtime.events.makeAsyncIterator()
        realtime.join("realtime:lobby", bindings: [])
        #expect(try await SupabaseClientsTests.next(&events) { if case .subscribed(let t) = $0 { t } else { nil } } == "realtime:lobby")
        running.cancel()

        // A phone in its tunnel: the proxy refuses it, and the request fails as a transport error.
        tunnel.begin(at: ShapingProxy.now() - 1)
        let offline = try HTTPConnection(engine: engine, proxy: proxy.tunnel(for: 2))
        do {
            _ = try await engine.send(HTTPEngineTests.get(keys, "/rest/v1/users"), on: offline)
            Issue.record("an offline phone reached the server")
        } catch {
            #expect(error.kind == .transport, "\(error)")
        }
        // A phone the proxy does not know is refused too.
        let stranger = try HTTPConnection(engine: engine, proxy: TunnelProxy(host: "127.0.0.1", port: proxy.port, phone: 99))
        await #expect(throws: WireError.self) { try await engine.send(HTTPEngineTests.get(keys, "/rest/v1/users"), on: stranger) }
        await proxy.stop()
        engine.shutdown()
        await server.stop()
    }
}
