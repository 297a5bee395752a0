import ConvoyCrypto
import ConvoyFleet
@testable import ConvoyServer
import ConvoyTime
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
        let cast: ProbeCast

        static func start(_ store: Store, migrations: String? = nil, strict: Bool = false, cast: ProbeCast = .app,
                          rateLimits: Bool = true) async throws -> Harness {
            var config = ServerConfiguration.testing
            config.jwtSecret = ProbeTests.secret
            config.strictPolicies = strict
            config.migrationsDirectory = migrations
            config.rateLimitsEnabled = rateLimits
            let (server, logger) = try await ProbeTests.start(config, on: store)
            let engine = try HTTPEngine()
            let target = SupabaseTarget(url: server.keys.url, anonKey: server.keys.anonKey, serviceKey: server.keys.serviceRoleKey)
            var runner = ProbeRunner(target: target, engine: engine, jwtSecret: ProbeTests.secret, logger: logger)
            runner.joinTimeout = 60 // a test process's busiest minute can hold a join's reply past the 10 s a run allows
            let castKind = cast
            let cast = try await runner.prepare(cast: cast)
            return Harness(server: server, engine: engine, runner: runner, attacker: cast.attacker, victims: cast.victims, cast: castKind)
        }

        /// As `convoy probe` runs a catalogue: each probe that writes on a cast of its own (`shared`: one cast for all).
        func report(_ catalogue: ProbeCatalogue, shared: Bool = false) async -> ProbeReport {
            let (runner, kind) = (runner, cast)
            let fresh: @Sendable () async throws -> ProbeRunner.Cast = { try await runner.prepare(cast: kind) }
            return await runner.report(catalogue, attacker: attacker, victims: victims, freshCast: shared ? nil : fresh)
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
        let connection = try await PostgresConnection.connect(configuration: try PostgresURL(url).connection, id: 0, logger: logger)
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
        // Every probe denied after its control, on both stores (the SQLite store's purge RPC is the service role's, as on PostgreSQL).
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

    /// After a control that failed, a write that could only be inconclusive is not sent: in a run it would write into a
    /// real phone's data (a Closer attacker whose phone had answered already wrote a release key over its own). The read
    /// after it, with its leak_if, is still sent, and finds nothing written.
    @Test func aWriteAfterAFailedControlIsNotSent() async throws {
        let yaml = """
        catalogue: premise
        probes:
          - id: write_after_failed_premise
            category: spoof_sender
            description: the premise (no row from the attacker to itself) does not hold; the write after it is not sent
            steps:
              - request: {method: POST, path: /rest/v1/encrypted_locations, headers: {Prefer: return=minimal}, body: {sender_id: "{{attacker.id}}", recipient_id: "{{attacker.id}}", payload: "{{captured.ciphertext}}"}}
              - request: {path: /rest/v1/encrypted_locations, query: {select: "id", recipient_id: "eq.{{attacker.id}}"}}
                requires: {rows: 0}
              - request: {method: POST, path: /rest/v1/encrypted_locations, headers: {Prefer: return=minimal}, body: {sender_id: "{{attacker.id}}", recipient_id: "{{friend.id}}", payload: "{{captured.ciphertext}}"}}
                expect: {status: [401, 403]}
              - request: {as: service, path: /rest/v1/encrypted_locations, query: {select: "id", recipient_id: "eq.{{friend.id}}", sender_id: "eq.{{attacker.id}}"}}
                leak_if: {rows: ">0"}
        """
        let h = try await Harness.start(.sqlite)
        let report = await h.report(try ProbeCatalogueFile.parse(yaml, file: "premise.yaml"), shared: true)
        await h.stop()
        let o = try #require(report.outcomes.first)
        #expect(o.leaked == 0 && o.verdict == .inconclusive, "\(o.verdict) \(o.notes) \(o.evidence.map(\.detail))")
        #expect(o.notes.contains { $0.hasPrefix("not sent premise.yaml:") }, "\(o.notes)")
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
              - request: {as: victim, path: /rest/v1/users, query: {select: "id", id: "eq.{{victim.id}}"}}
                requires: {rows: 1}
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
        #expect(o.evidence.first?.step == "allowed.yaml:9")
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

    /// What the seed's own policies let through (docs/probes.md, "probes/naarscars.yaml"): these, and nothing else.
    static let naarscarsSeedLeaks: Set<String> = [
        "self_approval_at_signup", "preclaimed_ride_in_victims_name", "transfer_own_ride_to_victim", "transfer_own_favor_to_victim",
        "join_others_conversation", "notify_someone_else", "list_invite_codes",
    ]
    /// With §2.1's recursion mended (`mendedNaarsCars`), each probe on the state its setup declares: the holes above,
    /// and those the recursion had hidden - §2.1's update policy lets anyone approve itself and make itself an admin,
    /// and §2.6 lets an approved member ask in another's name.
    static let naarscarsMendedLeaks: Set<String> = [
        "self_approval_at_signup", "preclaimed_ride_in_victims_name", "transfer_own_ride_to_victim", "transfer_own_favor_to_victim",
        "join_others_conversation", "notify_someone_else", "list_invite_codes",
        "self_approval", "self_escalation_to_admin", "request_qa_in_anothers_name_by_a_member",
    ]
    /// What the seed's own policies leave untestable: profiles_select_approved fails 42P17 for everyone, so the
    /// rightful readers of profiles, rides, favors and their participants are refused too (the controls fail),
    /// invite codes cannot be made (their insert policy reads profiles), and §2.8 hides a conversation from its
    /// own participants. Each is inconclusive, never "denied". So are the anon key's reads and the Q&A insert in
    /// another's name, which the recursion answers 500 42P17: a 5xx is the server failing, not a policy refusing.
    /// So are the profile updates and the deletes, whose controls fail for the same reason.
    static let naarscarsSeedInconclusive: Set<String> = [
        "read_unapproved_profile", "read_rides_unapproved", "read_favors_unapproved", "join_and_read_ride_participants",
        "join_and_read_favor_participants", "read_others_conversation", "invite_generation_limit",
        "anon_key_on_every_table", "request_qa_as_someone_else", "request_qa_in_anothers_name_by_a_member",
        // Their controls show the rightful party refused too: any PATCH of profiles fails 42P17 (§2.15's admin policy
        // reads profiles), and a filtered DELETE applies the SELECT policy, which reads profiles.
        "edit_victims_profile", "self_approval", "self_escalation_to_admin", "admin_only_paths_as_a_normal_user",
        "delete_victims_ride", "delete_victims_favor",
    ]

    @Test(.enabled(if: ProbeTests.postgres, "no PostgreSQL test cluster (scripts/pg-test-cluster run DIR swift test --filter Probe)"))
    func naarscarsCatalogueAgainstItsMigrations() async throws {
        let catalogue = try Self.catalogue("naarscars")
        let h = try await Harness.start(.postgres, migrations: Self.root.appendingPathComponent("examples/migrations/naarscars").path,
                                        cast: catalogue.cast)
        let report = await h.report(catalogue)
        await h.stop()
        print("naarscars on postgres:\n" + Self.describe(report))
        #expect(report.outcomes.count == catalogue.probes.count)
        #expect(report.outcomes.allSatisfy { $0.tried > 0 && $0.section != nil })
        // §2.8's policy hides a conversation from its own participant: a finding.
        #expect(report.outcomes.first { $0.id == "conversation_participant_sees_own" }?.findings == 1)
        let recursion = try #require(report.outcomes.first { $0.id == "profiles_policy_recursion" })
        #expect(recursion.findings == 1 && recursion.evidence.first?.responseBody.contains("42P17") == true)
        for o in report.outcomes {
            let expected: ProbeOutcome.Verdict = Self.naarscarsSeedLeaks.contains(o.id) ? .leaked
                : Self.naarscarsSeedInconclusive.contains(o.id) ? .inconclusive : .denied
            #expect(o.verdict == expected, "\(o.id): \(o.verdict) \(o.notes) \(o.evidence.map(\.detail))")
        }
        // §5.3's limits, found exactly; §6's estimate on the real code space (31 symbols, not 32).
        func measured(_ id: String) -> String { report.outcomes.first { $0.id == id }?.measurements.joined(separator: "\n") ?? "" }
        #expect(measured("claim_toggle_limit").contains("first refused at attempt 4"))
        #expect(measured("message_flood_limit").contains("first refused at attempt 11"))
        #expect(measured("login_failure_limit").contains("first refused at attempt 6"))
        #expect(measured("password_reset_limit").contains("first refused at attempt 4"))
        let brute = measured("invite_code_brute_force")
        #expect(brute.contains("first refused at attempt 6") && brute.contains("31^8 = 852,891,037,441"), "\(brute)")
        #expect(brute.contains("limit: 5 guesses per 1 h per caller"), "\(brute)")
        let many = measured("invite_code_brute_force_from_many_accounts")
        #expect(many.contains("first refused at attempt 11") && many.contains("limit: 5 guesses per 1 h per caller"), "each account's own five: \(many)")
        #expect(measured("used_and_unknown_codes_answer_alike").contains("answered alike"))
    }

    /// Naar's Cars' migrations with §2.1's recursion mended as the seed's authors would: the approved check in a
    /// SECURITY DEFINER function, so that policies reading profiles no longer fail 42P17. Nothing else changes.
    static func mendedNaarsCars() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("naarscars-mended-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = root.appendingPathComponent("examples/migrations/naarscars")
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path) where name.hasSuffix(".sql") || name.hasSuffix(".yaml") {
            var text = try String(contentsOf: source.appendingPathComponent(name), encoding: .utf8)
            if name == "002_policies.sql" {
                let recursive = "OR EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)"
                guard text.contains(recursive) else { throw CocoaError(.fileReadCorruptFile) }
                text = """
                    CREATE FUNCTION public.nc_approved(uid uuid) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
                      AS $$ SELECT EXISTS (SELECT 1 FROM public.profiles WHERE id = uid AND approved) $$;

                    """ + text.replacingOccurrences(of: recursive, with: "OR public.nc_approved(auth.uid())")
            }
            try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return dir
    }

    /// On the mended schema each probe runs on the state the catalogue's setup declares (issue 47, item 7): the attacker
    /// is the unapproved member it is meant to be, whatever the probes before it made of their own attacker. The control
    /// runs the same catalogue on one shared cast: there the attacker that approved itself and made itself an admin in
    /// early probes reads as an approved admin later, and policies that hold are blamed.
    @Test(.enabled(if: ProbeTests.postgres, "no PostgreSQL test cluster (scripts/pg-test-cluster run DIR swift test --filter Probe)"))
    func naarscarsOnTheMendedSchemaEachProbeRunsOnTheDeclaredState() async throws {
        let mended = try Self.mendedNaarsCars()
        defer { try? FileManager.default.removeItem(at: mended) }
        let catalogue = try Self.catalogue("naarscars")
        let h = try await Harness.start(.postgres, migrations: mended.path, cast: catalogue.cast)
        let isolated = await h.report(catalogue)
        let shared = await h.report(catalogue, shared: true)
        await h.stop()
        print("naarscars mended, isolated:\n" + Self.describe(isolated) + "\n\nnaarscars mended, shared:\n" + Self.describe(shared))
        let leaks = Set(isolated.outcomes.filter { $0.verdict == .leaked }.map(\.id))
        let sharedLeaks = Set(shared.outcomes.filter { $0.verdict == .leaked }.map(\.id))
        print("isolated leaks: \(leaks.sorted())\nshared leaks: \(sharedLeaks.sorted())")
        // Each probe ran on a cast as set up, which no probe had changed; the leaks are the seed's own holes, each with
        // the unapproved attacker it means (§2.1's update policy lets it approve itself and make itself an admin).
        for o in isolated.outcomes { #expect(o.state == ProbeOutcome.setUpCast, "\(o.id): \(o.state ?? "nil")") }
        #expect(leaks == Self.naarscarsMendedLeaks, "\(leaks.symmetricDifference(Self.naarscarsMendedLeaks).sorted())")
        // The control: on one cast, the attacker approved itself and became an admin early, and later reads "as the
        // unapproved" and "as a normal user" ran as an approved admin: policies that hold are blamed, and each such
        // report names the probe whose change it ran after.
        let blamed: Set<String> = ["admin_only_paths_as_a_normal_user", "read_rides_unapproved", "read_favors_unapproved",
                                   "join_and_read_ride_participants", "join_and_read_favor_participants", "request_qa_as_someone_else"]
        #expect(blamed.isSubset(of: sharedLeaks) && blamed.isDisjoint(with: leaks), "\(sharedLeaks.sorted())")
        for o in shared.outcomes where blamed.contains(o.id) {
            #expect(o.state?.hasPrefix("the cast as ") == true && o.state?.hasSuffix("left it, not as set up") == true, "\(o.id): \(o.state ?? "nil")")
        }
    }

    /// Each probe of probes/naarscars.yaml that can leak does, against Naar's Cars with its rules undone
    /// (Fixtures/naarscars-weakened: no RLS, no triggers, an invite check that tells used codes apart) and
    /// no rate limits: none of them is a probe that cannot fail.
    @Test(.enabled(if: ProbeTests.postgres, "no PostgreSQL test cluster (scripts/pg-test-cluster run DIR swift test --filter Probe)"))
    func naarscarsCatalogueCanFailEverywhere() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("naarscars-weakened-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = Self.root.appendingPathComponent("examples/migrations/naarscars")
        for file in try FileManager.default.contentsOfDirectory(atPath: source.path) where file.hasSuffix(".sql") {
            try FileManager.default.copyItem(at: source.appendingPathComponent(file), to: dir.appendingPathComponent(file))
        }
        let weaken = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/naarscars-weakened/005_weaken.sql")
        try FileManager.default.copyItem(at: weaken, to: dir.appendingPathComponent("005_weaken.sql"))
        let catalogue = try Self.catalogue("naarscars")
        let h = try await Harness.start(.postgres, migrations: dir.path, cast: catalogue.cast, rateLimits: false)
        let report = await h.report(catalogue)
        await h.stop()
        print("naarscars weakened:\n" + Self.describe(report))
        for probe in catalogue.probes where probe.steps.contains(where: { $0.expect != nil || $0.leakIf != nil }) {
            let o = try #require(report.outcomes.first { $0.id == probe.id })
            #expect(o.verdict == .leaked, "\(o.id) cannot fail: \(o.verdict) \(o.notes)")
        }
        let compare = try #require(report.outcomes.first { $0.id == "used_and_unknown_codes_answer_alike" })
        #expect(compare.evidence.first?.detail.contains("This invite code has already been used") == true, "the non-uniform error is named")
    }

    // MARK: The catalogue file

    /// A read probe must first show that the rightful reader gets the rows: without a control a read refused to
    /// everyone (a broken policy, a missing table) would count as denied. The loader refuses it, naming the line.
    @Test func aReadProbeWithoutAControlIsRefused() throws {
        let yaml = """
        catalogue: x
        probes:
          - id: read_victim
            category: read_others
            description: d
            steps:
              - request: {path: /rest/v1/encrypted_locations, query: {recipient_id: "eq.{{victim.id}}"}}
                leak_if: {rows: ">0"}
        """
        #expect {
            _ = try ProbeCatalogueFile.parse(yaml, file: "r.yaml")
        } throws: { error in
            let e = error as! ScenarioError
            return e.line == 7 && e.message.contains("shows no allowed reader") && e.message.contains("requires:")
        }
        let controlled = yaml.replacingOccurrences(of: "    steps:\n", with: """
            steps:
              - request: {as: victim, path: /rest/v1/encrypted_locations, query: {recipient_id: "eq.{{victim.id}}"}}
                requires: {rows: ">0"}

        """)
        #expect(try ProbeCatalogueFile.parse(controlled, file: "r.yaml").probes[0].steps.count == 2)
    }

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

    /// A repeat step against limits moved by the test's clock: it finds a per-caller limit exactly, sees the
    /// window reset (`reset_after`, waited on the server's clock), tells per-caller from per-address by
    /// rotating callers, and reports a leak when the limit is off.
    @Test func repeatStepsFindLimitsExactlyAndTheirReset() async throws {
        let catalogue = try ProbeCatalogueFile.parse("""
            catalogue: limits
            probes:
              - id: one_caller
                category: rate_limit
                description: six calls from the attacker; then, a minute later, one more
                steps:
                  - repeat:
                      times: 6
                      reset_after: 61s
                      request: {method: POST, path: /rest/v1/rpc/create_invite, body: {preference: precise}}
                    expect: {limited_at: 4, after_limit: 0, successes: 3, reset: true}
              - id: two_callers
                category: rate_limit
                description: six calls, the friend and the stranger in turn
                steps:
                  - repeat:
                      times: 6
                      callers: [friend, stranger]
                      request: {method: POST, path: /rest/v1/rpc/create_invite, body: {preference: precise}}
                    expect: {limited: false}
            """, file: "limits.yaml")
        let perCaller = RateLimits([RateLimitRule(name: "guesses", routes: [RateLimitRule.Route("POST /rest/v1/rpc/create_invite")!], scope: .caller, limit: 3, window: 60)])
        var perAddress = perCaller
        perAddress.rules[0].scope = .ip
        func run(_ limits: RateLimits, enabled: Bool = true) async throws -> ProbeReport {
            var config = ServerConfiguration.testing
            config.rateLimits = limits
            config.rateLimitsEnabled = enabled
            let clock = ManualClock(Date())
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let server = try await EmbeddedServer.start(config, clock: clock, logger: logger)
            let engine = try HTTPEngine()
            var runner = ProbeRunner(target: SupabaseTarget(url: server.keys.url, anonKey: server.keys.anonKey, serviceKey: server.keys.serviceRoleKey),
                                     engine: engine, logger: logger)
            runner.sleep = { clock.advance(to: clock.now() + $0) }
            let cast = try await runner.prepare()
            let report = await runner.report(catalogue, attacker: cast.attacker, victims: cast.victims)
            engine.shutdown()
            await server.stop()
            return report
        }
        func outcome(_ r: ProbeReport, _ id: String) -> ProbeOutcome? { r.outcomes.first { $0.id == id } }

        let callers = try await run(perCaller)
        #expect(outcome(callers, "one_caller")?.verdict == .denied, "\(Self.describe(callers))")
        // A route that answers 2xx: the attempt after the window is judged apart, not as a success after the limit.
        #expect(outcome(callers, "one_caller")?.measurements.first?.contains("6 attempts (3× 200, 3× 429)") == true)
        #expect(outcome(callers, "one_caller")?.measurements.first?.contains("first refused at attempt 4; went through again after the window") == true,
                "\(Self.describe(callers))")
        #expect(outcome(callers, "two_callers")?.verdict == .denied, "per caller: three each, none refused")

        let address = try await run(perAddress)
        let shared = try #require(outcome(address, "two_callers"))
        // One address: the attacker's attempt after the reset is still in the window, so two more go through.
        #expect(shared.verdict == .leaked && shared.evidence.first?.detail.contains("first refused at attempt 3") == true,
                "per address, the callers share one window \(Self.describe(address))")

        let off = try await run(perCaller, enabled: false)
        let open = try #require(outcome(off, "one_caller"))
        #expect(open.verdict == .leaked && open.evidence.first?.detail.contains("none refused") == true, "\(Self.describe(off))")
    }

    /// The abuse steps' mistakes: each names its file, line, column and key.
    @Test func abuseStepErrorsNameFileLineColumnAndKey() throws {
        func error(_ steps: String, top: String = "") -> ScenarioError? {
            let text = "catalogue: x\n\(top)probes:\n  - id: p\n    category: brute_force\n    description: d\n    steps:\n\(steps)"
            do {
                _ = try ProbeCatalogueFile.parse(text, file: "abuse.yaml")
                return nil
            } catch {
                return error
            }
        }
        let times = error("      - repeat: {times: lots, request: {path: /x}}\n        expect: {limited_at: 6}\n")
        #expect(times?.line == 7 && times?.path == "probes[0].steps[0].repeat.times" && times?.description.hasPrefix("abuse.yaml:7:") == true, "\(String(describing: times))")
        let rate = error("      - repeat: {times: 5, rate: quickly, request: {path: /x}}\n        expect: {limited_at: 6}\n")
        #expect(rate?.path == "probes[0].steps[0].repeat.rate" && rate?.message.contains("attempts per second") == true)
        let caller = error("      - repeat: {times: 5, callers: [attacker, mallory], request: {path: /x}}\n        expect: {limited_at: 6}\n")
        #expect(caller?.path == "probes[0].steps[0].repeat.callers[1]")
        let limitedAt = error("      - repeat: {times: 5, request: {path: /x}}\n        expect: {limited_at: soon}\n")
        #expect(limitedAt?.line == 8 && limitedAt?.path == "probes[0].steps[0].expect.limited_at")
        let window = error("      - repeat: {times: 5, request: {path: /x}, estimate: {per: caller}}\n        expect: {limited_at: 6}\n")
        #expect(window?.path == "probes[0].steps[0].repeat.estimate" && window?.message.contains("window") == true)
        let within = error("      - compare: {a: {path: /x}, b: {path: /y}, within: {ms: 15}}\n        expect: {alike: true}\n")
        #expect(within?.path == "probes[0].steps[0].compare.within" && within?.message.contains("ms and percent") == true)
        let alike = error("      - compare: {a: {path: /x}, b: {path: /y}}\n        expect: {alike: maybe}\n")
        #expect(alike?.path == "probes[0].steps[0].expect.alike")
        let noSpace = error("      - repeat: {times: 5, request: {method: POST, path: /x, body: {code: \"{{guess}}\"}}}\n        expect: {limited_at: 6}\n")
        #expect(noSpace?.line == 7 && noSpace?.path == "code_space" && noSpace?.message.contains("{{guess}} needs the catalogue's code_space") == true,
                "\(String(describing: noSpace))")
        let alphabet = error("      - request: {path: /x}\n        expect: {status: 403}\n", top: "code_space: {alphabet: AA, length: 8}\n")
        #expect(alphabet?.line == 2 && alphabet?.path == "code_space.alphabet", "\(String(describing: alphabet))")
        let cast = error("      - request: {path: /x}\n        expect: {status: 403}\n", top: "cast: gotru\n")
        #expect(cast?.path == "cast" && cast?.message.contains("did you mean \"gotrue\"") == true)
    }

    /// The brute-force arithmetic: distinct guesses find one of `live` codes in (size + 1) / (live + 1) on average.
    @Test func bruteForceEstimateDoesTheArithmetic() {
        let space = CodeSpace(alphabet: Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789"), length: 8, prefix: "NC", live: 1)
        #expect(space.size == 852_891_037_441)
        let perCaller = BruteForceEstimate(space: space, allowed: 5, measuredRate: 900,
                                           assumptions: BruteForceAssumptions(window: 3600, perCaller: true, accounts: 1000, ttl: 86_400))
        let expected: Double = 852_891_037_442.0 / 2 / (5.0 / 3600)
        #expect(abs(perCaller.oneAccount - expected) < 1)
        #expect(abs(perCaller.manyAccounts - perCaller.oneAccount / 1000) < 1e-6 * perCaller.oneAccount)
        // 1000 accounts × 120 guesses a day against one code in 8.5e11.
        #expect(abs(perCaller.withinTTL! - 120_000.0 / 852_891_037_441) < 1e-12)
        let perAddress = BruteForceEstimate(space: space, allowed: 5, measuredRate: 900,
                                            assumptions: BruteForceAssumptions(window: 3600, perCaller: false, accounts: 1000, ttl: nil))
        #expect(perAddress.manyAccounts == perAddress.oneAccount && perAddress.lines.contains { $0.contains("no faster") })
        let unlimited = BruteForceEstimate(space: space, allowed: nil, measuredRate: 900,
                                           assumptions: BruteForceAssumptions(window: 3600, perCaller: false, accounts: 1, ttl: nil))
        #expect(!unlimited.limited && unlimited.guessesPerSecond == 900 && unlimited.lines[1].contains("no limit found"))
    }

    @Test func shippedCataloguesLoadAndCoverTheIssuesCategories() throws {
        let greenbox = try Self.catalogue("greenbox")
        let categories = Set(greenbox.probes.map(\.category))
        #expect(categories.isSuperset(of: ["read_others", "spoof_sender", "key_substitution", "friendships", "tokens", "payloads", "replay", "policy_finding"]))
        #expect(greenbox.probes.allSatisfy { !$0.ifLeaked.isEmpty })
        let naarscars = try Self.catalogue("naarscars")
        #expect(naarscars.cast == .gotrue && naarscars.probes.allSatisfy { !$0.ifLeaked.isEmpty && $0.section != nil })
        #expect(naarscars.codeSpace?.alphabet.count == 31, "the seed's alphabet, counted: 31 symbols, not the 32 it says")
        // Every table's section and the rest of the seed's sections the issue names.
        let sections = naarscars.probes.compactMap(\.section).joined(separator: ", ")
        for section in (1...15).map({ "§2.\($0)" }) + ["§3", "§4", "§5.3", "§6", "§7"] {
            let named = sections.range(of: NSRegularExpression.escapedPattern(for: section) + "(?![0-9])", options: .regularExpression)
            #expect(named != nil, "no probe names \(section)")
        }
        let auth = try Self.catalogue("supabase-auth")
        #expect(auth.cast == .gotrue && auth.probes.count == 3)
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
