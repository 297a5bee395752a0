@testable import ConvoyFleet
import ConvoyMetrics
import ConvoyServer
import ConvoyWire
import Foundation
import Logging
import Testing

/// Survale's phones going off their network now and then: the chat lines and photos posted while a member
/// was off reach it when it comes back (it loads the operation's chat), and the accounting of lines and media
/// closes per member, with far fewer `not_received` than the same run without the catch-up.
@Suite(.serialized) struct SurvaleCatchUpRunTests {
    static let scenario = """
        name: survale-catch-up
        seed: 11
        app: survale
        groups:
          - name: dropouts
            count: 10
            tracks: { synthetic: drive }
            cadence: 1s..2s
            conditions: { offline: { every: 6s, for: 2500ms } }
            message_every: 400ms..800ms
            photo_every: 1500ms..2500ms
            photo_size: 8KB..16KB
        social:
          groups: 5
        timeline:
          arrival_rate: 40/s
          steady: 14s
          ramp_down: 500ms
        """

    static func run(catchUp: Bool) async throws -> FleetRun.Outcome {
        var server = ServerConfiguration.testing
        server.app = "survale"
        let scenario = try ScenarioFile.parse(Self.scenario, file: "survale-catch-up.yaml")
        var outcome: FleetRun.Outcome?
        try await withEmbeddedBackend(server) { embedded, engine in
            let target = SupabaseTarget(url: embedded.keys.url, anonKey: embedded.keys.anonKey, serviceKey: embedded.keys.serviceRoleKey)
            var configuration = FleetRun.Configuration(scenario: scenario, scenarioFile: "survale-catch-up.yaml", target: target, runID: "cu", drain: 2)
            configuration.app = SurvaleApp(archiveEvery: 5)
            configuration.device.catchUpChat = catchUp
            let fleet = FleetRun(configuration, engine: engine, logger: .quiet)
            outcome = try await FleetGate.run { try await fleet.run() }
        }
        return try #require(outcome)
    }

    @Test func linesAndPhotosPostedWhileAMemberWasOffArriveWhenItComesBack() async throws {
        let outcome = try await Self.run(catchUp: true)
        let c = outcome.metrics.counters
        let all = c.sorted { $0.key < $1.key }.description
        let messages = try #require(outcome.groups?.messages, "\(all)")
        let media = try #require(outcome.groups?.media, "\(all)")
        #expect(c[.reconnects] >= 10 && c[.chatCatchUps] > 0, "\(all)")
        // Lines and photos a member missed while off its network were loaded when it came back.
        #expect(messages.caughtUp > 0 && c[.messagesCaughtUp] >= messages.caughtUp, "\(messages)")
        #expect(media.caughtUp > 0 && c[.mediaCaughtUp] >= media.caughtUp, "\(media)")
        // Each line counted once however it came (live, loaded, or both through the lookback).
        #expect(c[.messagesReceived] == messages.delivered + messages.unexpected, "\(messages) \(all)")
        #expect(c[.mediaReceived] == media.delivered + media.unexpected, "\(media) \(all)")
        // The accounting closes per member, and little is left missing.
        #expect(messages.closes && messages.expected == c[.messagesExpected] && messages.lostTotal == c[.messagesLost], "\(messages)")
        #expect(media.closes && media.expected == c[.mediaExpected] && media.lostTotal == c[.mediaLost], "\(media)")
        // What is still missing is what members owed when the run ended (`never_back`: how much depends on how
        // loaded the machine is at the end); a member back on its network misses almost nothing.
        #expect(Set(messages.lost.keys).isSubset(of: ["never_back", "not_received"]), "\(messages)")
        #expect((messages.lost["not_received"] ?? 0) * 20 <= messages.expected, "\(messages)")
        #expect((media.lostTotal - (media.lost["never_back"] ?? 0)) * 10 <= media.expected, "\(media)")
        // Live and caught-up latency kept apart.
        #expect(outcome.metrics.statistic("message_latency", "count") == Double(c[.messagesReceived] - c[.messagesCaughtUp]))
        #expect(outcome.metrics.statistic("message_catch_up_latency", "count") == Double(c[.messagesCaughtUp]))
        #expect(outcome.metrics.statistic("media_catch_up_latency", "count") == Double(c[.mediaCaughtUp]))
        #expect(outcome.metrics.statistic("message_catch_up_latency", "p50") ?? 0 > outcome.metrics.statistic("message_latency", "p50") ?? .infinity,
                "a line loaded after a gap waited out the gap")

        // The same run without the catch-up: what a member misses while off stays missed.
        let before = try await Self.run(catchUp: false)
        let b = before.metrics.counters
        let missed = try #require(before.groups?.messages)
        #expect(b[.chatCatchUps] == 0 && missed.caughtUp == 0 && missed.closes, "\(missed)")
        let notReceived = messages.lost["not_received"] ?? 0
        let notReceivedBefore = missed.lost["not_received"] ?? 0
        #expect(notReceivedBefore >= 20 && notReceived * 4 <= notReceivedBefore, "after \(messages.lost), before \(missed.lost)")
    }
}
