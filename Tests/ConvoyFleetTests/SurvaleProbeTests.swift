import ConvoyFleet
import ConvoyServer
import ConvoyWire
import Foundation
import Logging
import Testing

/// probes/survale.yaml against `convoy serve --app survale`, SQLite in-process and PostgreSQL
/// on CONVOY_TEST_POSTGRES_URL (scripts/pg-test-cluster run DIR swift test --filter SurvaleProbe):
/// another operation's private channels refuse every kind of credential, its rows, media and
/// lifecycle stay its own; a probe aimed at what is allowed, or a weakened policy, shows as a leak.
@Suite(.serialized) struct SurvaleProbeTests {
    typealias Store = ProbeTests.Store

    struct Harness {
        let server: EmbeddedServer
        let engine: HTTPEngine
        let runner: ProbeRunner
        let attacker: ProbeParty
        let victims: ProbeVictims

        static func start(_ store: Store, migrations: String? = nil) async throws -> Harness {
            var config = ServerConfiguration.testing
            (config.app, config.jwtSecret, config.migrationsDirectory) = ("survale", ProbeTests.secret, migrations)
            let (server, logger) = try await ProbeTests.start(config, on: store)
            let engine = try HTTPEngine()
            let target = SupabaseTarget(url: server.keys.url, anonKey: server.keys.anonKey, serviceKey: server.keys.serviceRoleKey)
            var runner = ProbeRunner(target: target, engine: engine, jwtSecret: ProbeTests.secret, logger: logger, app: SurvaleApp())
            runner.joinTimeout = 60 // a test process's busiest minute can hold a join's reply past the 10 s a run allows
            let cast = try await runner.prepare()
            return Harness(server: server, engine: engine, runner: runner, attacker: cast.attacker, victims: cast.victims)
        }

        func report(_ catalogue: ProbeCatalogue) async -> ProbeReport {
            await runner.report(catalogue, attacker: attacker, victims: victims)
        }

        func stop() async {
            engine.shutdown()
            await server.stop()
        }
    }

    static let channelProbes = ["join_victim_channels_with_attacker_token", "join_victim_channels_with_anon_key", "join_victim_channels_with_expired_token",
                                "join_victim_channels_with_forged_token", "join_victim_channels_with_alg_none", "join_victim_channels_with_forged_service_role"]

    /// The acceptance line: another operation's private channel refuses every kind of credential, on both stores.
    @Test(arguments: Store.available)
    func survaleCatalogueLeaksNothingAndEveryCredentialIsRefusedItsChannels(_ store: Store) async throws {
        let h = try await Harness.start(store)
        let catalogue = try ProbeTests.catalogue("survale")
        let report = await h.report(catalogue)
        await h.stop()
        print("survale on \(store):\n" + ProbeTests.describe(report))
        #expect(report.outcomes.count == catalogue.probes.count)
        for o in report.outcomes {
            #expect(o.tried > 0 && o.verdict == .denied && o.notes.isEmpty, "\(o.id): \(o.verdict) \(o.notes) \(o.evidence.map(\.detail))")
        }
        #expect(report.passed && report.totals.leaked == 0)
        for id in Self.channelProbes {
            let probe = try #require(catalogue.probes.first { $0.id == id })
            let o = try #require(report.outcomes.first { $0.id == id })
            // Each join judged (refused) with its control joined: nothing inconclusive, nothing skipped.
            #expect(o.denied == probe.steps.filter(\.isJudged).count && o.denied >= 2, "\(id): \(o.denied) of \(probe.steps.count)")
        }
        // Broadcast carries no sender identity: a member can speak as a teammate (docs/server.md, known gaps).
        let impersonation = try #require(report.outcomes.first { $0.id == "impersonate_teammate_in_broadcast" })
        #expect(impersonation.findings == 1 && impersonation.evidence.first?.kind == .finding)
        #expect(impersonation.evidence.first?.detail.contains("1 of its broadcasts delivered") == true, "\(impersonation.evidence.map(\.detail))")
    }

    /// A probe can fail: the same judging aimed at what the attacker may do (its own operation's
    /// channel, its own chat) reports leaks, with the channel's evidence.
    @Test func probesAimedAtWhatIsAllowedReportLeaks() async throws {
        let yaml = """
        catalogue: doctored
        probes:
          - id: own_channel_is_not_refused
            category: channels
            description: the attacker's own operation's channel, expected refused (it is not)
            steps:
              - channel: {topic: "op_{{attacker.operation}}_locations", control: friend}
                expect: {joined: false}
          - id: own_broadcast_reaches_teammate
            category: broadcast
            description: the attacker's broadcast on its own channel, expected undelivered (it is delivered)
            steps:
              - channel:
                  topic: "op_{{attacker.operation}}_chat"
                  control: friend
                  broadcast: {event: probe, payload: {note: "{{run}}"}}
                expect: {delivered: 0}
          - id: own_presence_is_visible
            category: presence
            description: the attacker sees its case agent present on its own channel
            steps:
              - channel: {topic: "op_{{attacker.operation}}_locations", control: friend}
                leak_if: {presences: ">0", body_contains: "{{friend.id}}"}
          - id: a_control_that_fails_is_inconclusive
            category: channels
            description: the victim cannot join A's channel, so nothing is tested
            steps:
              - channel: {as: victim, topic: "op_{{attacker.operation}}_locations"}
                requires: {joined: true}
              - request: {path: /rest/v1/op_messages, query: {operation_id: "eq.{{victim.operation}}"}}
                leak_if: {rows: ">0"}
        """
        let h = try await Harness.start(.sqlite)
        let report = await h.report(try ProbeCatalogueFile.parse(yaml, file: "doctored.yaml"))
        await h.stop()
        print("doctored on sqlite:\n" + ProbeTests.describe(report))
        #expect(!report.passed)
        for id in ["own_channel_is_not_refused", "own_broadcast_reaches_teammate", "own_presence_is_visible"] {
            let o = try #require(report.outcomes.first { $0.id == id })
            #expect(o.verdict == .leaked && o.leaked == 1 && o.evidence.first?.method == "WS", "\(id): \(o.verdict) \(o.notes)")
        }
        let joined = try #require(report.outcomes.first?.evidence.first)
        #expect(joined.status == 101 && joined.step == "doctored.yaml:7" && joined.path.contains(" private"))
        #expect(joined.headers["access_token"] == "<attacker access token>")
        let inconclusive = try #require(report.outcomes.last)
        #expect(inconclusive.verdict == .inconclusive && inconclusive.notes.first?.hasPrefix("inconclusive doctored.yaml:") == true)
    }

    /// A weakened policy on PostgreSQL: every signed-in user reads every channel and every chat line.
    @Test(.enabled(if: ProbeTests.postgres, "no PostgreSQL test cluster (scripts/pg-test-cluster run DIR swift test --filter SurvaleProbe)"))
    func weakenedChannelAndChatPoliciesAreDetected() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-weak-survale-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try """
        CREATE POLICY everyone_reads_channels ON realtime.messages FOR SELECT TO authenticated USING (true);
        CREATE POLICY everyone_reads_chat ON public.op_messages FOR SELECT TO authenticated USING (true);

        """.write(to: dir.appendingPathComponent("001_weaken.sql"), atomically: true, encoding: .utf8)
        let h = try await Harness.start(.postgres, migrations: dir.path)
        let report = await h.report(try ProbeTests.catalogue("survale"))
        await h.stop()
        print("survale on a weakened PostgreSQL:\n" + ProbeTests.describe(report))
        #expect(!report.passed)
        for id in ["join_victim_channels_with_attacker_token", "read_victim_presence", "read_victim_chat"] {
            let o = try #require(report.outcomes.first { $0.id == id })
            #expect(o.verdict == .leaked && !o.evidence.isEmpty, "\(id) must see the weakened policy: \(o.notes)")
        }
        for id in ["join_victim_channels_with_forged_token", "join_victim_channels_with_alg_none", "end_victim_operation", "read_victim_media"] {
            #expect(report.outcomes.first { $0.id == id }?.verdict == .denied, "\(id): tokens and other policies are untouched")
        }
    }

    @Test func channelStepErrorsNameFileLineAndKey() throws {
        let bad = """
        catalogue: x
        probes:
          - id: p
            category: channels
            description: d
            steps:
              - channel: {topic: "op_{{victim.operation}}_locations", privat: true}
                expect: {joined: false}
        """
        #expect {
            _ = try ProbeCatalogueFile.parse(bad, file: "bad.yaml")
        } throws: { error in
            let e = error as! ScenarioError
            return e.line == 7 && e.path == "probes[0].steps[0].channel.privat" && e.message.contains("did you mean \"private\"")
        }
        let badJoined = bad.replacingOccurrences(of: ", privat: true", with: "").replacingOccurrences(of: "joined: false", with: "joined: maybe")
        #expect {
            _ = try ProbeCatalogueFile.parse(badJoined, file: "j.yaml")
        } throws: { error in
            let e = error as! ScenarioError
            return e.line == 8 && e.path == "probes[0].steps[0].expect.joined" && e.message.contains("true or false")
        }
        let savedOnChannel = bad.replacingOccurrences(of: ", privat: true}", with: "}\n        save: {x: id}")
        #expect {
            _ = try ProbeCatalogueFile.parse(savedOnChannel, file: "s.yaml")
        } throws: { error in
            (error as! ScenarioError).message.contains("save keeps columns of a request's response")
        }
        let unknownField = bad.replacingOccurrences(of: "victim.operation", with: "victim.operatoin").replacingOccurrences(of: ", privat: true", with: "")
        #expect {
            _ = try ProbeCatalogueFile.parse(unknownField, file: "u.yaml")
        } throws: { error in
            (error as! ScenarioError).message.contains("did you mean {{victim.operation}}")
        }
        let catalogue = try ProbeTests.catalogue("survale")
        #expect(catalogue.probes.allSatisfy { !$0.ifLeaked.isEmpty && !$0.description.isEmpty })
        #expect(Set(catalogue.probes.map(\.category)).isSuperset(of: ["channels", "broadcast", "presence", "read_others", "operations", "membership", "nearby", "tokens"]))
    }
}
