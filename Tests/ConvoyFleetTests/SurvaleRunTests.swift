@testable import ConvoyFleet
import ConvoyMetrics
import ConvoyServer
import ConvoyWire
import Foundation
import Logging
import Testing

/// Survale's phones against an embedded `convoy serve --app survale`: teams in
/// operations broadcast on their private channel, every member's update is
/// accounted for, presence reaches the team, the case agents end their
/// operations and the backend ends the abandoned one in time.
@Suite(.serialized) struct SurvaleRunTests {
    /// Auto-end at 8 s: the operations are started in set-up, and a phone on a loaded machine may take seconds to
    /// arrive and join; an operation nobody is on for the auto-end time ends, as the backend should.
    static func scenario(devices: Int = 12, abandon: Int = 1, autoEnd: String = "8s") throws -> Scenario {
        try ScenarioFile.parse("""
            name: survale
            seed: 3
            app: survale
            groups:
              - name: units
                count: \(devices)
                tracks: { synthetic: drive }
                cadence: 600ms..900ms
                gps_denied: { windows: [1s..3s], fallback: wifi }
                message_every: 1s..2s
            social:
              groups: 4..6
              abandon: \(abandon)
              abandon_at: 5s
              auto_end: \(autoEnd)
              replay_every: 4s
              dm_every: 1s..2s
            timeline:
              arrival_rate: 40/s
              steady: 14s
              ramp_down: 500ms
            """, file: "survale.yaml")
    }

    /// `autoEnd`: the server's auto-end, seconds. An operation's idle clock starts when set-up starts it, before its
    /// members arrive: a short one ends an operation before its group gets going when set-up is slow (CI saw a group of
    /// three refused its channels from the first join). Only the tests of auto-end make it short.
    static func run(_ scenario: Scenario, autoEnd: Double = 60, housekeeps: Bool = true) async throws -> FleetRun.Outcome {
        var server = ServerConfiguration.testing
        (server.app, server.autoEndAfter, server.housekeeps) = ("survale", autoEnd, housekeeps)
        var outcome: FleetRun.Outcome?
        try await withEmbeddedBackend(server) { embedded, engine in
            let target = SupabaseTarget(url: embedded.keys.url, anonKey: embedded.keys.anonKey, serviceKey: embedded.keys.serviceRoleKey)
            var configuration = FleetRun.Configuration(scenario: scenario, scenarioFile: "survale.yaml", target: target, runID: "sv", drain: 2)
            configuration.app = SurvaleApp(archiveEvery: 2)
            let fleet = FleetRun(configuration, engine: engine, logger: .quiet)
            outcome = try await FleetGate.run { try await fleet.run() }
        }
        return try #require(outcome)
    }

    @Test func teamsBroadcastToEveryMemberAndTheAbandonedOperationAutoEnds() async throws {
        let outcome = try await Self.run(try Self.scenario(), autoEnd: 8)
        let c = outcome.metrics.counters
        #expect(outcome.accounting.sent > 0 && outcome.accounting.closes, "\(c.sorted { $0.key < $1.key })")
        // Under a loaded test machine a connection may drop and a few broadcasts with it; nothing else is lost.
        #expect(outcome.accounting.lostTotal * 20 <= outcome.accounting.sent, "\(outcome.accounting.lost)")
        #expect(Set(outcome.accounting.lost.keys).isSubset(of: ["not_received", "recipient_disconnected"]), "\(outcome.accounting.lost)")
        #expect(c[.groupNotJoined] == 0 && c[.decryptFailures] == 0 && c[.receivedFromStrangers] == 0)
        #expect(outcome.metrics.statistic("broadcast_ack", "count") ?? 0 > 0)
        // Positions travel in the clear: writing and reading them is timed as encode and decode, never as encryption.
        #expect(outcome.metrics.statistic("encode", "count") ?? 0 > 0 && outcome.metrics.statistic("decode", "count") ?? 0 > 0)
        #expect(outcome.metrics.statistic("seal", "count") ?? 0 == 0 && outcome.metrics.statistic("open", "count") ?? 0 == 0)
        #expect(c[.devicesNeverSubscribed] == 0 && c[.presenceTracks] >= 12 && c[.presenceUnconverged] == 0, "\(c.sorted { $0.key < $1.key })")
        #expect(outcome.metrics.statistic("presence_convergence", "count") ?? 0 > 0)
        let groups = try #require(outcome.groups)
        #expect(groups.groups == 2 && groups.abandoned == 1)
        #expect(groups.autoEnded == 1 && groups.endedByOwner == 1 && groups.holds, "\(groups.findings)")
        #expect(groups.autoEndAfterSeconds.allSatisfy { $0 >= 7 && $0 <= 8 + groups.graceSeconds }, "\(groups.autoEndAfterSeconds)")
        #expect(c[.groupEndedSeen] > 0, "members saw their case agent end the operation")
        #expect(c[.reducedAccuracySent] > 0 && c[.reducedAccuracyReceived] > 0, "GPS-denied fixes reach the team flagged reduced")
        // Each phone's map of its teammates: fresh to about a cadence (600–900 ms here) and the latency.
        #expect(outcome.metrics.statistic("teammate_staleness", "count") ?? 0 > 0)
        #expect(outcome.metrics.statistic("teammate_staleness", "p50") ?? 9e9 < 2e6, "p50 in µs: \(outcome.metrics.statistic("teammate_staleness", "p50") ?? -1)")
        // Chat: lines posted to op_messages reach the members on the private chat channel, each once.
        // A line posted as its operation ends is refused (the member is no longer in an active operation).
        #expect(c[.messagesSent] > 0 && c[.messagesFailed] * 10 <= c[.messagesSent], "\(c.sorted { $0.key < $1.key })")
        #expect(c[.messagesReceived] > 0 && c[.messagesReceived] <= c[.messagesExpected] + c[.messagesSent], "\(c.sorted { $0.key < $1.key })")
        // Live lines only: a line loaded after a connection dropped is timed apart.
        #expect(outcome.metrics.statistic("message_latency", "count") == Double(c[.messagesReceived] - c[.messagesCaughtUp]))
        let chat = try #require(outcome.groups?.messages)
        #expect(chat.closes && chat.expected == c[.messagesExpected] && chat.lostTotal * 20 <= chat.expected, "\(chat)")
        // The archive: each phone's positions appended for replay in batches. A batch flushed after its operation
        // ended is refused (only a current member of an active operation appends): at most one a phone.
        #expect(c[.archived] > 0 && c[.archived] <= c[.updates] && c[.archiveFailures] <= 12, "\(c.sorted { $0.key < $1.key })")
        // After-action replay (spec §8): the case agent loads it every 4 s while the operation runs, and right after
        // ending it reads back every position its members archived (moving ones with their heading) and every line.
        let replay = try #require(groups.replay)
        #expect(replay.groups == 1 && replay.complete == 1 && replay.notTested == 1 && replay.holds, "\(replay) \(groups.findings)")
        #expect(replay.positionsExpected > 0 && replay.positionsReturned >= replay.positionsExpected, "\(replay)")
        #expect(replay.withHeading * 2 > replay.positionsReturned, "a driving phone's positions carry its heading: \(replay)")
        #expect(replay.messagesExpected > 0 && replay.messagesReturned >= replay.messagesExpected, "\(replay)")
        #expect(c[.replays] >= 3 && c[.replayFailures] == 0 && outcome.metrics.statistic("replay_load", "count") == Double(c[.replays]))
        // Direct messages between each member and its case agent, on the pair's private channel: each sent to a partner
        // online arrives, or is lost because the partner's connection was down (nothing stores it).
        let direct = try #require(groups.direct)
        #expect(direct.expected > 20 && direct.closes && direct.unexpected == 0, "\(direct)")
        // On a loaded machine a partner may still be joining the pair's channel, or a message still on its way as the run
        // ends (CI: 1 of 83 each); within the 5%.
        #expect(Set(direct.lost.keys).isSubset(of: ["recipient_disconnected", "partner_not_on_pair_channel", "not_received"])
                && direct.lostTotal * 20 <= direct.expected, "\(direct)")
        #expect(c[.directReceived] == direct.delivered && c[.directFailures] == 0, "\(c.sorted { $0.key < $1.key })")
        #expect(outcome.metrics.statistic("direct_latency", "count") == Double(c[.directReceived]))
    }

    @Test func photosAndVideosReachTheTeamThroughStorageWithEveryDownloadAccounted() async throws {
        let scenario = try ScenarioFile.parse("""
            name: survale-media
            seed: 5
            app: survale
            groups:
              - name: units
                count: 8
                tracks: { synthetic: drive }
                cadence: 1s..2s
                photo_every: 1s..2s
                photo_size: 20KB..40KB
                video_every: 4s..6s
                video_size: 60KB..90KB
            social:
              groups: 4
            timeline:
              arrival_rate: 40/s
              steady: 8s
            """, file: "survale.yaml")
        let outcome = try await Self.run(scenario)
        let c = outcome.metrics.counters
        let media = try #require(outcome.groups?.media, "\(c.sorted { $0.key < $1.key })")
        #expect(media.sent >= 16 && media.sent == c[.mediaSent], "\(media)")
        #expect(media.expected == c[.mediaExpected] && media.expected >= media.sent, "teammates were online: \(media)")
        // Accounting closes: every download expected is delivered or lost with a reason, and the counters say so.
        #expect(media.closes && media.lostTotal == c[.mediaLost] && media.delivered > 0, "\(media)")
        #expect(media.lostTotal * 10 <= media.expected, "\(media)")
        #expect(media.failedTotal * 10 <= media.sent, "a post as the operation ends may be refused: \(media)")
        #expect(c[.mediaReceived] == media.delivered + media.unexpected)
        // Bytes: each upload 20–90 KB; each member downloads what was uploaded.
        #expect(media.bytesUp >= media.sent * 20_000 && media.bytesUp <= (media.sent + media.failedTotal + media.retried) * 90_000, "\(media)")
        #expect(media.bytesDown >= media.delivered * 20_000 && c[.mediaProgress] >= media.sent, "\(c.sorted { $0.key < $1.key })")
        #expect(outcome.metrics.statistic("media_upload", "count") ?? 0 >= Double(media.sent))
        #expect(outcome.metrics.statistic("media_latency", "count") == Double(c[.mediaReceived] - c[.mediaCaughtUp]))
        #expect(outcome.metrics.statistic("media_latency", "p50") ?? 0 >= outcome.metrics.statistic("media_download", "p50") ?? .infinity,
                "delivery includes the download")
        #expect(c[.messagesSent] == 0 && c[.messagesExpected] == 0, "media lines are not counted as text")
    }

    @Test func anOperationTheBackendNeverEndsFailsTheCheck() async throws {
        // Auto-end off on the backend: the abandoned operation stays active, and the run says so.
        let outcome = try await Self.run(try Self.scenario(devices: 8, autoEnd: "1s"), autoEnd: 1, housekeeps: false)
        let groups = try #require(outcome.groups)
        #expect(groups.autoEndLate == 1 && !groups.holds)
        #expect(groups.findings.first?.kind == "auto_end_late")
    }
}
