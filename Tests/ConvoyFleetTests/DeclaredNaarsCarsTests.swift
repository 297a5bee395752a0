@testable import ConvoyFleet
import ConvoyJSON
import ConvoyMetrics
import ConvoyServer
import ConvoyWire
import Foundation
import Testing

/// Naar's Cars declared as an app of actions alone (examples/apps/naarscars.yaml) on its SQL
/// (examples/migrations/naarscars, PostgreSQL): against the seed's policies as written, rides are posted and messages
/// sent, while every read of rides fails (42P17: §2.1's policy on profiles reads profiles); with those policies
/// mended (the control), the reads and claims go through. Each action's count agrees with the rows it left.
@Suite(.serialized) struct DeclaredNaarsCarsTests {
    static let app = AppFileTests.root.appendingPathComponent("examples/apps/naarscars.yaml").path
    static let sql = AppFileTests.root.appendingPathComponent("examples/migrations/naarscars").path

    @Test func naarsCarsDeclaresActionsAloneAndItsScenarioNamesThem() throws {
        let spec = try AppFile.load(Self.app)
        #expect(!spec.sharesLocations && spec.setup.count == 4 && spec.setup.filter(\.asService).count == 3)
        #expect(spec.actions.map(\.name) == ["ride_post", "rides_refresh", "ride_claim", "message_send"])
        // §5.2's client floors and §5.3's server limits: a claim 20 s apart at least (3 a minute), a message 6 s (10 a minute).
        let every = Dictionary(uniqueKeysWithValues: spec.actions.map { ($0.name, $0.every) })
        #expect(every["ride_claim"]!.lowerBound >= 20 && every["message_send"]!.lowerBound >= 6 && every["rides_refresh"]!.lowerBound >= 2)
        let scenario = try ScenarioFile.load(AppFileTests.root.appendingPathComponent("scenarios/naarscars.yaml").path)
        #expect(scenario.thresholds.count == 8 && scenario.social.friends == 0...0 && scenario.retention.checkEvery == 0)
        #expect(scenario.app.profile?.sharesLocation == false)
        // What an app of actions alone cannot use is refused at its key.
        for (key, text) in [("social", "social: {friends: 2..3}"), ("retention", "retention: {window: 1m}")] {
            do {
                _ = try ScenarioFile.parse("name: x\napp: {file: \(Self.app)}\ngroups: [{name: a, count: 2}]\n\(text)\n", file: "/tmp/x.yaml")
                Issue.record("\(key) accepted")
            } catch {
                #expect(error.line == 4 && error.description.contains("does nothing for app naarscars"), "\(error)")
            }
        }
        do {
            _ = try ScenarioFile.parse("name: x\napp: {file: \(Self.app)}\ngroups: [{name: a, count: 2, cadence: 5s}]\n", file: "/tmp/x.yaml")
            Issue.record("cadence accepted")
        } catch {
            #expect(error.description.contains("its phones do not share locations"), "\(error)")
        }
    }

    struct Run {
        var counters: [String: Int]
        var timed: Set<String>
        var rides: Int
        var claimed: Int
        var messages: Int
        var profiles: Int
    }

    /// A short run of the app, its cadences quickened, on `folder` (the SQL) served by PostgreSQL.
    static func run(sql folder: String) async throws -> Run {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nc-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("naarscars.yaml").path
        var text = try String(contentsOfFile: Self.app, encoding: .utf8)
        for (old, new) in [("sql: ../migrations/naarscars", "sql: \(folder)"), ("every: 2m..6m\n    share: 40%", "every: 1s..3s\n    share: 100%"),
                           ("every: 2s..30s", "every: 1s..2s"), ("every: 20s..60s\n    share: 30%", "every: 4s..6s\n    share: 100%"),
                           ("every: 6s..20s", "every: 6s..8s")] {
            #expect(text.contains(old), "\(old)")
            text = text.replacingOccurrences(of: old, with: new)
        }
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let spec = try AppFile.load(file)
        var config = ServerConfiguration.testing
        config.jwtSecret = ProbeTests.secret
        (config.app, config.migrationsDirectory) = ("migrations", spec.sqlFolder)
        let scenario = try ScenarioFile.parse("""
            name: nc
            seed: 5
            app: {file: \(file)}
            groups: [{name: members, count: 8}]
            timeline: {arrival_rate: 40/s, steady: 10s, ramp_down: 500ms}
            """, file: "nc.yaml")
        let (outcome, (rides, messages, profiles)) = try await DeclaredBeaconTests.run(scenario, config, on: .postgres) { admin, service in
            (try await admin.select("rides", query: "select=id,claimed_by&limit=100000", token: service),
             try await admin.select("messages", query: "select=id&limit=100000", token: service),
             try await admin.select("profiles", query: "select=id&approved=is.true", token: service))
        }
        return Run(counters: outcome.metrics.counters,
                   timed: Set(spec.actions.map(\.name).filter { outcome.metrics.statistic($0, "count") != nil }),
                   rides: rides.count, claimed: rides.filter { $0["claimed_by"] != nil && $0["claimed_by"] != .null }.count,
                   messages: messages.count, profiles: profiles.count)
    }

    @Test(.enabled(if: ProbeTests.Store.available.contains(.postgres), "PostgreSQL: scripts/pg-test-cluster run DIR swift test"))
    func theSeedsPoliciesLetRidesAndMessagesThroughAndNoReadOfRides() async throws {
        let seed = try await Self.run(sql: Self.sql)
        let c = seed.counters
        #expect(seed.profiles == 8, "every phone's set-up made and approved its profile")
        #expect((c["actions.ride_post"] ?? 0) > 0 && c["action_failures.ride_post"] == nil && seed.rides == c["actions.ride_post"], "\(c)")
        #expect((c["actions.message_send"] ?? 0) > 0 && c["action_failures.message_send"] == nil && seed.messages == c["actions.message_send"], "\(c)")
        #expect((c["action_failures.rides_refresh"] ?? 0) > 0 && c["actions.rides_refresh"] == nil, "\(c)")
        #expect((c["action_failures.ride_claim"] ?? 0) > 0 && c["actions.ride_claim"] == nil && seed.claimed == 0, "\(c)")
        #expect((c["http_errors.500"] ?? 0) >= (c["action_failures.rides_refresh"] ?? 0), "42P17 is answered 500: \(c)")
        #expect(seed.timed == ["ride_post", "message_send"])

        // The control: §2.1's read of profiles through a definer function, and an open ride claimable by anyone.
        let mended = FileManager.default.temporaryDirectory.appendingPathComponent("nc-sql-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: mended, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: mended) }
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.sql) where name.hasSuffix(".sql") || name.hasSuffix(".yaml") {
            var text = try String(contentsOfFile: Self.sql + "/" + name, encoding: .utf8)
            if name == "002_policies.sql" {
                let recursive = "OR EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)"
                let claim = "FOR UPDATE USING (auth.uid() = user_id OR auth.uid() = claimed_by);"
                #expect(text.contains(recursive) && text.contains(claim))
                text = """
                    CREATE FUNCTION public.nc_approved(uid uuid) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
                      AS $$ SELECT EXISTS (SELECT 1 FROM public.profiles WHERE id = uid AND approved) $$;

                    """ + text.replacingOccurrences(of: recursive, with: "OR public.nc_approved(auth.uid())")
                    .replacingOccurrences(of: claim, with: "FOR UPDATE USING (auth.uid() = user_id OR auth.uid() = claimed_by OR claimed_by IS NULL);")
            }
            try text.write(toFile: mended.appendingPathComponent(name).path, atomically: true, encoding: .utf8)
        }
        let fixed = try await Self.run(sql: mended.path)
        let f = fixed.counters
        #expect((f["actions.rides_refresh"] ?? 0) > 0 && f["action_failures.rides_refresh"] == nil, "\(f)")
        #expect((f["actions.ride_claim"] ?? 0) > 0 && fixed.claimed == f["actions.ride_claim"], "each claim made is a claimed ride: \(f), \(fixed.claimed)")
        #expect(fixed.timed.isSuperset(of: ["ride_post", "rides_refresh", "ride_claim", "message_send"]))
    }
}
