import ConvoyCrypto
import ConvoyFleet
import ConvoyServer
import ConvoyWire
import Foundation
import Logging
import PostgresNIO
import Testing

/// The probe catalogues against `convoy serve`: SQLite in-process, and
/// PostgreSQL on CONVOY_TEST_POSTGRES_URL (scripts/pg-test-cluster run DIR
/// swift test --filter Probe); a weakened policy must show as a leak.
@Suite(.serialized) struct ProbeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let postgresURL = ProcessInfo.processInfo.environment["CONVOY_TEST_POSTGRES_URL"]
    static let postgresRequired = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_POSTGRES"] == "1"
    static let postgres = postgresURL != nil || postgresRequired
    static let secret = "probe-tests-jwt-secret-0123456789abcdef"

    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
        static var available: [Store] { ProbeTests.postgres ? [.sqlite, .postgres] : [.sqlite] }
    }

    /// A server, an engine and a runner with a fresh cast.
    struct Harness {
        let server: EmbeddedServer
        let engine: HTTPEngine
        let runner: ProbeRunner
        let attacker: ProbeParty
        let victims: ProbeVictims

        static func start(_ store: Store, migrations: String? = nil, strict: Bool = false) async throws -> Harness {
            var config = ServerConfiguration.testing
            config.jwtSecret = ProbeTests.secret
            config.strictPolicies = strict
            config.migrationsDirectory = migrations
            let (server, logger) = try await ProbeTests.start(config, on: store)
            let engine = try HTTPEngine()
            let target = SupabaseTarget(url: server.keys.url, anonKey: server.keys.anonKey, serviceKey: server.keys.serviceRoleKey)
            let runner = ProbeRunner(target: target, engine: engine, jwtSecret: ProbeTests.secret, logger: logger)
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

    /// `config`'s server on `store` (a fresh PostgreSQL database for each), quiet, with the logger the tests use.
    static func start(_ config: ServerConfiguration, on store: Store) async throws -> (EmbeddedServer, Logger) {
        var config = config
        if store == .postgres {
            config.databasePath = try await freshDatabase()
            config.postgresConnections = 4
        }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return (try await EmbeddedServer.start(config, logger: logger), logger)
    }

    static func freshDatabase() async throws -> String {
        guard let url = postgresURL, var components = URLComponents(string: url) else {
            throw Missing()
        }
        let name = "convoy_probe_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var logger = Logger(label: "test.pg")
        logger.logLevel = .critical
        let configuration = PostgresConnection.Configuration(host: components.host ?? "127.0.0.1", port: components.port ?? 5432,
                                                             username: components.user ?? "postgres", password: components.password,
                                                             database: String(components.path.dropFirst()), tls: .disable)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
        components.path = "/\(name)"
        return components.string!
    }

    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "CONVOY_REQUIRE_POSTGRES=1 but CONVOY_TEST_POSTGRES_URL is not set: run scripts/pg-test-cluster run /tmp/pgx swift test --filter Probe"
        }
    }

    static func catalogue(_ name: String) throws -> ProbeCatalogue {
        try ProbeCatalogueFile.load(root.appendingPathComponent("probes/\(name).yaml").path)
    }

    static func describe(_ report: ProbeReport) -> String {
        report.outcomes.map { o in
            "\(o.id) [\(o.category)] \(o.verdict.rawValue): tried \(o.tried) denied \(o.denied) leaked \(o.leaked) findings \(o.findings)"
                + (o.notes.isEmpty ? "" : "\n    " + o.notes.joined(separator: "\n    "))
                + o.evidence.map { "\n    \($0.kind.rawValue) \($0.method) \($0.path) → \($0.status): \($0.detail)" }.joined()
        }.joined(separator: "\n")
    }

    // MARK: Green Box

    @Test(arguments: Store.available)
    func greenboxCatalogueIsDeniedEverywhereAndNonFriendPostIsAFinding(_ store: Store) async throws {
        let h = try await Harness.start(store)
        let catalogue = try Self.catalogue("greenbox")
        let report = await h.report(catalogue)
        await h.stop()
        print("greenbox on \(store):\n" + Self.describe(report))
        #expect(report.outcomes.count == catalogue.probes.count)
        for o in report.outcomes {
            #expect(o.tried > 0 && o.verdict == .denied, "\(o.id): \(o.verdict) \(o.notes) \(o.evidence.map(\.detail))")
        }
        #expect(report.passed)
        let finding = try #require(report.outcomes.first { $0.id == "post_to_non_friend" })
        #expect(finding.findings == 1 && finding.evidence.first?.kind == .finding && finding.evidence.first?.status == 201)
        let replay = try #require(report.outcomes.first { $0.id == "replay_captured_ciphertext" })
        #expect(replay.findings == 1 && replay.denied == 1, "the server stores the replay; the device rejects it")
        #expect(report.totals.leaked == 0 && report.totals.tried == catalogue.probes.count)
    }

    @Test func strictPoliciesDenyTheNonFriendPost() async throws {
        let h = try await Harness.start(.sqlite, strict: true)
        let catalogue = try ProbeCatalogueFile.parse(try String(contentsOfFile: Self.root.appendingPathComponent("probes/greenbox.yaml").path, encoding: .utf8), file: "greenbox.yaml")
        let report = await h.report(ProbeCatalogue(name: "strict", probes: catalogue.probes.filter { $0.id == "post_to_non_friend" }))
        await h.stop()
        let o = try #require(report.outcomes.first)
        #expect(o.verdict == .denied && o.findings == 0 && o.denied == 1)
    }

    // MARK: A probe that can report a leak

    /// `--migrations` adds a permissive SELECT policy on encrypted_locations:
    /// the read probes must report it, with the request and response.
    @Test(.enabled(if: ProbeTests.postgres, "no PostgreSQL test cluster (scripts/pg-test-cluster run DIR swift test --filter Probe)"))
    func weakenedSelectPolicyIsDetectedAsALeak() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-weak-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try "CREATE POLICY everyone_reads_locations ON public.encrypted_locations FOR SELECT TO authenticated USING (true);\n"
            .write(to: dir.appendingPathComponent("001_weaken.sql"), atomically: true, encoding: .utf8)
        let h = try await Harness.start(.postgres, migrations: dir.path)
        let report = await h.report(try Self.catalogue("greenbox"))
        await h.stop()
        print("greenbox on a weakened PostgreSQL:\n" + Self.describe(report))
        #expect(!report.passed)
        for id in ["read_victim_locations_rest", "read_all_locations_rest", "read_victim_locations_realtime"] {
            let o = try #require(report.outcomes.first { $0.id == id })
            #expect(o.verdict == .leaked && !o.evidence.isEmpty, "\(id) must see the weakened policy")
        }
        let leak = try #require(report.outcomes.first { $0.id == "read_victim_locations_rest" }?.evidence.first)
        #expect(leak.method == "GET" && leak.status == 200 && leak.path.contains(h.victims.victim.userID) && leak.responseBody.contains(h.victims.victim.userID))
        #expect(leak.headers["Authorization"] == "Bearer <attacker access token>")
        #expect(report.outcomes.first { $0.id == "spoof_sender_as_friend" }?.verdict == .denied, "other policies are untouched")
    }

    /// Without PostgreSQL: a catalogue probe aimed at what the policy allows
    /// (any signed-in user reads public keys) is reported as a leak, with its evidence redacted.
    @Test func aProbeAtWhatThePolicyAllowsReportsALeakAndTheReportHoldsNoSecret() async throws {
        let yaml = """
        catalogue: allowed
        probes:
          - id: users_are_readable
            category: read_others
            description: any signed-in user reads the victim's users row (allowed by the PRD)
            steps:
              - request:
                  path: /rest/v1/users
                  query: {select: "id,public_key", id: "eq.{{victim.id}}"}
                  headers: {X-Echo: "{{attacker.token}}"}
                leak_if: {rows: ">0", body_contains: "{{victim.public_key}}"}
          - id: token_in_a_body
            category: tokens
            description: a body that carries tokens, as an echoing endpoint would return them
            steps:
              - request:
                  method: POST
                  path: /auth/v1/token
                  query: {grant_type: refresh_token}
                  body: {refresh_token: "{{attacker.token}}", forged: "{{token.forged}}"}
                expect: {status: 200}
        """
        let h = try await Harness.start(.sqlite)
        let report = await h.report(try ProbeCatalogueFile.parse(yaml, file: "allowed.yaml"))
        await h.stop()
        print("allowed on sqlite:\n" + Self.describe(report))
        let o = try #require(report.outcomes.first)
        #expect(o.verdict == .leaked && o.leaked == 1 && o.evidence.first?.responseBody.contains(h.victims.victim.userID) == true)
        #expect(o.evidence.first?.step == "allowed.yaml:7")
        #expect(!report.passed)
        #expect(report.outcomes[1].verdict == .leaked, "a refused refresh is not 200")
        let encoded = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        let parties = [h.attacker, h.victims.friend, h.victims.victim, h.victims.stranger]
        let secrets = parties.flatMap { [$0.session.accessToken, $0.session.refreshToken] }
            + [h.server.keys.anonKey, h.server.keys.serviceRoleKey, Self.secret]
        for s in secrets { #expect(!encoded.contains(s)) }
        #expect(!encoded.contains("eyJ"), "no JWT of any kind")
        #expect(encoded.contains("<attacker access token>"))
    }

    // MARK: Naar's Cars

    @Test(.enabled(if: ProbeTests.postgres, "no PostgreSQL test cluster (scripts/pg-test-cluster run DIR swift test --filter Probe)"))
    func naarscarsCatalogueAgainstItsMigrations() async throws {
        let h = try await Harness.start(.postgres, migrations: Self.root.appendingPathComponent("examples/migrations/naarscars").path)
        let catalogue = try Self.catalogue("naarscars")
        let report = await h.report(catalogue)
        await h.stop()
        print("naarscars on postgres:\n" + Self.describe(report))
        #expect(report.outcomes.count == catalogue.probes.count)
        #expect(report.outcomes.allSatisfy { $0.tried > 0 })
        let recursion = try #require(report.outcomes.first { $0.id == "profiles_policy_recursion" })
        #expect(recursion.findings == 1 && recursion.evidence.first?.responseBody.contains("42P17") == true)
        // What the seed's own policies let through (see docs/probes.md): the self-approval hole.
        let selfApproval = try #require(report.outcomes.first { $0.id == "self_approval" })
        #expect(selfApproval.verdict == .leaked, "profiles_update_own lets a user set approved on its own row")
        for o in report.outcomes where o.id != "self_approval" {
            #expect(o.verdict == .denied, "\(o.id): \(o.verdict) \(o.notes) \(o.evidence.map(\.detail))")
        }
    }

    // MARK: The catalogue file

    @Test func loaderErrorsNameFileLineAndKey() throws {
        let bad = """
        catalogue: x
        probes:
          - id: p
            category: read_others
            description: d
            steps:
              - request: {path: /rest/v1/users}
                leak_iff: {rows: ">0"}
        """
        #expect {
            _ = try ProbeCatalogueFile.parse(bad, file: "bad.yaml")
        } throws: { error in
            let e = error as! ScenarioError
            return e.file == "bad.yaml" && e.line == 8 && e.path == "probes[0].steps[0].leak_iff"
                && e.description.hasPrefix("bad.yaml:8:") && e.message.contains("did you mean \"leak_if\"")
        }
        let placeholder = bad.replacingOccurrences(of: "leak_iff: {rows: \">0\"}", with: "leak_if: {body_contains: \"{{victim.idd}}\"}")
        #expect {
            _ = try ProbeCatalogueFile.parse(placeholder, file: "p.yaml")
        } throws: { error in
            let e = error as! ScenarioError
            return e.line == 8 && e.path == "probes[0].steps[0].leak_if.body_contains" && e.message.contains("{{victim.id}}")
        }
        let judgeless = bad.replacingOccurrences(of: "    leak_iff: {rows: \">0\"}\n", with: "").replacingOccurrences(of: "\n        leak_iff: {rows: \">0\"}", with: "")
        #expect(throws: ScenarioError.self) { try ProbeCatalogueFile.parse(judgeless, file: "j.yaml") }
        let badStatus = bad.replacingOccurrences(of: "leak_iff: {rows: \">0\"}", with: "expect: {status: [2xy]}")
        #expect {
            _ = try ProbeCatalogueFile.parse(badStatus, file: "s.yaml")
        } throws: { error in
            (error as! ScenarioError).path == "probes[0].steps[0].expect.status[0]"
        }
    }

    @Test func shippedCataloguesLoadAndCoverTheIssuesCategories() throws {
        let greenbox = try Self.catalogue("greenbox")
        let categories = Set(greenbox.probes.map(\.category))
        #expect(categories.isSuperset(of: ["read_others", "spoof_sender", "key_substitution", "friendships", "tokens", "payloads", "replay", "policy_finding"]))
        #expect(greenbox.probes.allSatisfy { !$0.ifLeaked.isEmpty })
        let naarscars = try Self.catalogue("naarscars")
        #expect(naarscars.setup.count == 4 && naarscars.probes.allSatisfy { !$0.ifLeaked.isEmpty })
    }

    @Test func replayCheckRejectsStaleAndStrangers() {
        var check = ReplayCheck(friends: ["f"], maxAge: 600)
        let now = 1_700_000_000.0
        #expect(check.check(sender: "f", .init(lat: 1, lon: 1, ts: now - 2, acc: 5, seq: 1), now: now) == .accept)
        #expect(check.check(sender: "f", .init(lat: 1, lon: 1, ts: now - 1, acc: 5, seq: 2), now: now) == .accept)
        #expect(check.check(sender: "f", .init(lat: 1, lon: 1, ts: now - 2, acc: 5, seq: 1), now: now) == .stale)
        #expect(check.check(sender: "x", .init(lat: 1, lon: 1, ts: now, acc: 5, seq: 9), now: now) == .notAFriend)
        #expect(check.check(sender: "f", .init(lat: 1, lon: 1, ts: now - 3600, acc: 5, seq: 10), now: now) == .tooOld)
        #expect(check.check(sender: "f", .init(lat: 1, lon: 1, ts: now + 3600, acc: 5, seq: 10), now: now) == .fromTheFuture)
        #expect(check.check(sender: "f", .init(lat: 1, lon: 1, ts: now, acc: 5), now: now) == .accept, "no seq: newer ts")
    }
}
