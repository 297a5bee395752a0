import ConvoyFleet
import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Logging
import Testing

/// probes/closer.yaml against `convoy serve --app closer` in-process, on a clock the runner moves (the expired-code
/// probe waits out a 5 s invite TTL on it): every probe denied, the accept limit found exactly; against a server
/// with every rule undone and no limit, every probe leaks.
@Suite(.serialized) struct CloserProbeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func report(weaknesses: Set<CloserWeakness> = [], limits: Bool = true) async throws -> ProbeReport {
        var config = ServerConfiguration.testing
        config.app = CloserServer.appName
        config.inviteTTL = 5
        config.rateLimitsEnabled = limits
        config.closerWeaknesses = weaknesses
        let clock = ManualClock(Date())
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = try await EmbeddedServer.start(config, clock: clock, logger: logger)
        let engine = try HTTPEngine()
        var runner = ProbeRunner(target: SupabaseTarget(url: server.keys.url, anonKey: "", serviceKey: nil), engine: engine, logger: logger,
                                 app: try #require(Apps.make("closer")))
        runner.sleep = { clock.advance(to: clock.now() + $0) }
        runner.joinTimeout = 60
        let catalogue = try ProbeCatalogueFile.load(root.appendingPathComponent("probes/closer.yaml").path)
        let cast = try await runner.prepare()
        let report = await runner.report(catalogue, attacker: cast.attacker, victims: cast.victims)
        engine.shutdown()
        await server.stop()
        return report
    }

    static func describe(_ r: ProbeReport) -> String {
        r.outcomes.map { "\($0.id) \($0.verdict.rawValue) \($0.notes) \($0.evidence.map(\.detail)) \($0.measurements)" }.joined(separator: "\n")
    }

    @Test func everyProbeIsDeniedAndTheAcceptLimitIsFoundExactly() async throws {
        let r = try await Self.report()
        #expect(r.outcomes.count == 12)
        for o in r.outcomes { #expect(o.verdict == .denied, "\(o.id): \(Self.describe(r))") }
        // The answer and release-key rules: seven checks judged, each denied after its control held.
        let answers = try #require(r.outcomes.first { $0.id == "answer_and_release_key_rules" })
        #expect(answers.tried == 7 && answers.denied == 7 && answers.notes.isEmpty, "\(Self.describe(r))")
        let one = try #require(r.outcomes.first { $0.id == "accept_brute_force_one_account" }).measurements.joined(separator: "\n")
        // The attacker is in a couple: its guesses are refused as that (400), after the limit counted them.
        #expect(one.contains("12 attempts (10× 400, 2× 429)") && one.contains("first refused at attempt 11"), "\(one)")
        #expect(one.contains("62^6 = 56,800,235,584") && one.contains("limit: 10 guesses per 1 h per caller"), "\(one)")
        #expect(one.contains("one attacker: expected 323,980 years") && one.contains("1,000 accounts: 324 years"), "\(one)")
        // Two accounts in turn: the stranger had spent three (the expired code, the comparison's two), so its eighth
        // attempt here (the 16th) is the first refused; the friend (one spent, its own acceptance, unseen) gets nine.
        // The allowance reported counts what the pass spent before: ten, the limit.
        let many = try #require(r.outcomes.first { $0.id == "accept_brute_force_many_accounts" }).measurements.joined(separator: "\n")
        #expect(many.contains("first refused at attempt 16") && many.contains("limit: 10 guesses per 1 h per caller"), "\(many)")
        // The manual's design: a live code is "taken" to createInviteCallable - a finding; its limit holds (the
        // attacker made its couple's invite in the cast, so its tenth attempt is the first refused).
        let create = try #require(r.outcomes.first { $0.id == "create_invite_reveals_live_codes" })
        #expect(create.findings == 1 && create.measurements.joined().contains("first refused at attempt 10"), "\(create.measurements)")
    }

    /// Each rule undone makes the probe that checks it leak: none of them is a probe that cannot fail.
    static let caughtBy: [CloserWeakness: [String]] = [
        .noAcceptLimit: ["accept_brute_force_one_account", "accept_brute_force_many_accounts"],
        .acceptExpired: ["expired_code_is_refused"], .revealUsed: ["used_and_unknown_codes_answer_alike"],
        .readableInvites: ["read_others_invite"], .clientCoupleWrites: ["write_couple_document"],
        .clientInviteWrites: ["write_invite_document"], .readableDocuments: ["read_other_couple", "answer_and_release_key_rules"],
        .clientPremium: ["grant_premium_to_self"], .unverifiedTokens: ["forged_tokens"], .looseAnswers: ["answer_and_release_key_rules"],
    ]

    @Test(arguments: CloserWeakness.allCases)
    func eachWeaknessIsCaughtByItsProbe(_ weakness: CloserWeakness) async throws {
        let r = try await Self.report(weaknesses: [weakness])
        let expected = try #require(Self.caughtBy[weakness])
        for o in r.outcomes {
            #expect(o.verdict == (expected.contains(o.id) ? .leaked : .denied), "\(weakness.rawValue): \(o.id) \(o.verdict): \(Self.describe(r))")
        }
        if weakness == .revealUsed {
            let compare = try #require(r.outcomes.first { $0.id == "used_and_unknown_codes_answer_alike" })
            #expect(compare.evidence.first?.detail.contains("This invite was already used.") == true, "the non-uniform error is named")
        }
    }

    @Test func withoutLimitsTheBruteForceProbesLeak() async throws {
        let r = try await Self.report(limits: false)
        let leaked = Set(r.outcomes.filter { $0.verdict == .leaked }.map(\.id))
        #expect(leaked == ["accept_brute_force_one_account", "accept_brute_force_many_accounts", "create_invite_reveals_live_codes"], "\(Self.describe(r))")
    }
}
