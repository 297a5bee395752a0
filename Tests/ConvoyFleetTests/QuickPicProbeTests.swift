import ConvoyFleet
import ConvoyServer
import ConvoySodium
import ConvoyWire
import Foundation
import Logging
import Testing

/// probes/quickpic.yaml against `convoy serve --app quickpic`, SQLite in-process and PostgreSQL on
/// CONVOY_TEST_POSTGRES_URL: the reference server denies every probe; the same catalogue against a server
/// with each rule undone (`--weaken`) shows every probe leaking, so none of them is a probe that cannot fail.
@Suite(.serialized) struct QuickPicProbeTests {
    typealias Store = ProbeTests.Store

    static func report(_ store: Store, weaknesses: Set<QuickPicWeakness> = [], hash: PasswordHash = .interactive) async throws
        -> (ProbeCatalogue, ProbeReport, String) {
        let catalogue = try ProbeTests.catalogue("quickpic")  // before the server: a bad file leaves nothing running
        var config = ServerConfiguration.testing
        (config.app, config.tokenTTL, config.quickPicWeaknesses) = ("quickpic", QuickPicServer.defaultTokenTTL, weaknesses)
        // libsodium's login cost (tens of ms a hash), so a login that skips it shows in the timing probe.
        config.passwordHash = hash
        let (server, logger) = try await ProbeTests.start(config, on: store)
        let engine = try HTTPEngine()
        defer { engine.shutdown() }
        let runner = ProbeRunner(target: SupabaseTarget(url: server.keys.url, anonKey: "", serviceKey: nil), engine: engine,
                                 logger: logger, app: QuickPicApp())
        let cast: (attacker: ProbeParty, victims: ProbeVictims)
        do { cast = try await runner.prepare() } catch {
            await server.stop()
            throw error
        }
        let report = await runner.report(catalogue, attacker: cast.attacker, victims: cast.victims)
        await server.stop()
        return (catalogue, report, [cast.attacker, cast.victims.friend, cast.victims.victim, cast.victims.stranger].map(\.session.accessToken)
            .joined(separator: " "))
    }

    @Test(arguments: Store.available)
    func theReferenceServerDeniesEveryProbe(_ store: Store) async throws {
        let (catalogue, report, _) = try await Self.report(store)
        print("quickpic on \(store):\n" + ProbeTests.describe(report))
        #expect(report.outcomes.count == catalogue.probes.count && catalogue.probes.count >= 15)
        for o in report.outcomes {
            let judged = catalogue.probes.first { $0.id == o.id }?.steps.filter(\.isJudged).count ?? 0
            #expect(o.verdict == .denied && o.denied == judged && o.notes.isEmpty, "\(o.id): \(o.verdict) \(o.notes) \(o.evidence.map(\.detail))")
        }
        #expect(report.passed && report.totals.leaked == 0)
    }

    @Test func aServerWithEachRuleUndoneLeaksOnEveryProbeAndNoSecretIsShown() async throws {
        let (catalogue, report, tokens) = try await Self.report(.sqlite, weaknesses: Set(QuickPicWeakness.allCases))
        print("quickpic weakened:\n" + ProbeTests.describe(report))
        for o in report.outcomes {
            #expect(o.verdict == .leaked && o.notes.isEmpty, "\(o.id): \(o.verdict) \(o.notes)")
        }
        #expect(Set(report.outcomes.map(\.id)) == Set(catalogue.probes.map(\.id)) && !report.passed)
        // The evidence names requests and answers, never a party's token.
        let evidence = report.outcomes.flatMap(\.evidence).map { "\($0.path) \($0.headers) \($0.requestBody ?? "") \($0.responseBody) \($0.detail)" }
            .joined(separator: "\n")
        for token in tokens.split(separator: " ") { #expect(!evidence.contains(token)) }
    }

    /// Each of the two weaknesses that no probe caught alone (issue 47, item 6): keep-acked makes the acknowledged
    /// message leak, and fast-unknown the login timing at libsodium's login cost; at the minimum cost (convoy serve's
    /// default) a hash is too cheap to show, and the timing probe says inconclusive, never denied.
    @Test func keepAckedAndFastUnknownAreEachCaughtOrSaidUntestable() async throws {
        func outcome(_ id: String, _ report: ProbeReport) -> ProbeOutcome? { report.outcomes.first { $0.id == id } }
        let (_, acked, _) = try await Self.report(.sqlite, weaknesses: [.keepAcked])
        #expect(outcome("acked_message_is_served_again", acked)?.verdict == .leaked, "\(ProbeTests.describe(acked))")
        #expect(acked.outcomes.filter { $0.verdict == .leaked }.map(\.id) == ["acked_message_is_served_again"])
        let (_, fast, _) = try await Self.report(.sqlite, weaknesses: [.fastUnknown])
        #expect(fast.outcomes.filter { $0.verdict == .leaked }.map(\.id) == ["login_timing_says_nothing_of_who_exists"], "\(ProbeTests.describe(fast))")
        // The same weakness at the minimum cost: nothing could show, so the probe is not "denied".
        let (_, cheap, _) = try await Self.report(.sqlite, weaknesses: [.fastUnknown], hash: .minimum)
        let timing = try #require(outcome("login_timing_says_nothing_of_who_exists", cheap))
        #expect(timing.verdict == .inconclusive && timing.notes.first?.contains("the control needs") == true, "\(timing)")
    }
}
