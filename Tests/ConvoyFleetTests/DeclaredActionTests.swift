@testable import ConvoyFleet
import ConvoyMetrics
import ConvoyServer
import ConvoyWire
import Foundation
import Testing

/// A declared app's `actions:` (docs/apps.md, "Actions"): each a metric of its own name, which thresholds may name
/// and no other app's scenario may, made on the phones at its cadence, counted when it fails.
@Suite(.serialized) struct DeclaredActionTests {
    static func scenario(_ app: String, thresholds: [String]) throws -> Scenario {
        let text = "name: t\napp: {file: \(app)}\ngroups: [{name: a, count: 2}]\nthresholds:\n" + thresholds.map { "  - \($0)\n" }.joined()
        return try ScenarioFile.parse(text, file: "/tmp/t.yaml")
    }

    static func refusal(_ app: String, _ threshold: String) -> String? {
        do {
            _ = try scenario(app, thresholds: [threshold])
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func anActionIsAMetricItsAppsThresholdsMayName() throws {
        let spec = try AppFile.load(DeclaredBeaconTests.beacon)
        #expect(spec.actions.map(\.name) == ["follows_refresh"] && spec.actions[0].every == 10...20 && spec.actions[0].share == 1)
        #expect(spec.actions[0].steps.first?.kind == .select(table: "follows", query: "select=follow_id,leader,state&follower=eq.{{me.id}}&order=follow_id.asc"))
        let s = try Self.scenario(DeclaredBeaconTests.beacon, thresholds: ["follows_refresh.p95 < 1s", "actions.follows_refresh > 0",
                                                                          "action_failures.follows_refresh == 0"])
        #expect(s.thresholds.count == 3)
        // The control: the same thresholds on an app without that action, and misspelt on Beacon.
        #expect(Self.refusal(AppFileTests.greenBox, "follows_refresh.p95 < 1s")?.contains("no histogram is named follows_refresh") == true)
        #expect(Self.refusal(AppFileTests.greenBox, "actions.follows_refresh > 0")?.contains("it declares none") == true)
        let misspelt = Self.refusal(DeclaredBeaconTests.beacon, "action_failures.follows_refrsh == 0")
        #expect(misspelt?.contains("did you mean action_failures.follows_refresh?") == true, "\(misspelt ?? "accepted")")
        #expect(Self.refusal(DeclaredBeaconTests.beacon, "follows_refrsh.p95 < 1s")?.contains("did you mean follows_refresh?") == true)
    }

    /// Each mistake in an action, at its line: (replaced, by, words).
    static let mistakes: [(String, String, String)] = [
        ("  - name: follows_refresh\n", "  - name: post\n", "not one of Convoy's own"),
        ("  - name: follows_refresh\n", "  - name: Follows-Refresh\n", "lowercase letters, digits and _"),
        ("    every: 10s..20s\n", "    every: 20s..10s\n", "its low end first"),
        ("        query: \"select=", "        body: {a: 1}\n        query: \"select=", "a select sends no body"),
        ("{{me.id}}&order=follow_id.asc", "{{friend.id}}&order=follow_id.asc", "unknown placeholder {{friend.id}}"),
    ]

    /// Beside Beacon's file, so that its SQL folder is found.
    static let mine = URL(fileURLWithPath: DeclaredBeaconTests.beacon).deletingLastPathComponent().appendingPathComponent("mine.yaml").path

    @Test(arguments: 0..<mistakes.count) func aMistakeInAnActionIsAnErrorAtItsLine(_ i: Int) throws {
        let (old, new, words) = Self.mistakes[i]
        let text = try String(contentsOfFile: DeclaredBeaconTests.beacon, encoding: .utf8)
        #expect(text.contains(old))
        do {
            _ = try AppFile.parse(text.replacingOccurrences(of: old, with: new), file: Self.mine)
            Issue.record("\(new) was accepted")
        } catch {
            #expect(error.file == Self.mine && error.line > 60 && error.description.contains(words), "\(error)")
        }
    }

    /// Beacon's file with its action's step replaced (`broken`), written beside it.
    static func beacon(_ broken: String) throws -> String {
        let text = try String(contentsOfFile: DeclaredBeaconTests.beacon, encoding: .utf8)
        let folder = URL(fileURLWithPath: DeclaredBeaconTests.beacon).deletingLastPathComponent().path
        let file = folder + "/beacon-broken-action-\(UUID().uuidString.prefix(6)).yaml"
        let step = "      - select: follows\n        query: \"select=follow_id,leader,state&follower=eq.{{me.id}}&order=follow_id.asc\"\n"
        #expect(text.contains(step))
        try text.replacingOccurrences(of: step, with: broken)
            .replacingOccurrences(of: "every: 10s..20s", with: "every: 1s..2s").write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// A template naming a table the backend lacks stops set-up, naming the file's key, the request and the answer,
    /// instead of a run whose every action fails (as it did). The control: Beacon's own file runs (`DeclaredBeaconTests`).
    @Test func anActionOnATableTheBackendLacksStopsSetUp() async throws {
        let file = try Self.beacon("      - select: no_such_table\n        query: \"select=id\"\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let text = try #require(try await Self.setUpRefusal(file), "the run went on with a table the backend lacks")
        #expect(text.contains("actions[0].steps[0] names no_such_table") && text.contains("GET /rest/v1/no_such_table?select=*&limit=0 → HTTP 4"), "\(text)")
    }

    /// What set-up said when it stopped a short run of `file` on the embedded store; nil when the run went on.
    static func setUpRefusal(_ file: String) async throws -> String? {
        let scenario = try FleetRunTests.scenario(devices: 4, steady: "2s", extra: "app: { file: \(file) }")
        do {
            _ = try await DeclaredBeaconTests.run(scenario, DeclaredBeaconTests.configuration(try AppFile.load(file)), on: .sqlite) { _, _ in () }
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// A column the backend lacks, named where the phones write (the posting row), stops set-up as a missing table does.
    @Test func aColumnTheBackendLacksStopsSetUp() async throws {
        let source = try String(contentsOfFile: DeclaredBeaconTests.beacon, encoding: .utf8)
        #expect(source.contains("box_hex: \"{{sealed}}\""))
        let file = Self.mine.replacingOccurrences(of: "mine.yaml", with: "beacon-no-column-\(UUID().uuidString.prefix(6)).yaml")
        try source.replacingOccurrences(of: "box_hex: \"{{sealed}}\"", with: "box_hexx: \"{{sealed}}\"").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let text = try #require(try await Self.setUpRefusal(file), "the run went on with a column the backend lacks")
        #expect(text.contains("posting.row names beacons(") && text.contains("box_hexx") && text.contains("→ HTTP 400"), "\(text)")
    }

    /// The control for Beacon's run (`DeclaredBeaconTests`, where the action is made and none fails): an action the
    /// backend refuses during the run (an RPC it lacks: nothing set-up can read ahead) fails on every phone that makes
    /// it, counted by name, and is never timed as made.
    @Test func anActionTheBackendRefusesIsCountedAsFailed() async throws {
        let file = try Self.beacon("      - rpc: no_such_function\n        body: {fan: \"{{me.id}}\"}\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let spec = try AppFile.load(file)
        let scenario = try FleetRunTests.scenario(devices: 6, steady: "4s", extra: "app: { file: \(file) }")
        let (outcome, _) = try await DeclaredBeaconTests.run(scenario, DeclaredBeaconTests.configuration(spec), on: .sqlite) { _, _ in () }
        let c = outcome.metrics.counters
        #expect((c["action_failures.follows_refresh"] ?? 0) > 0 && c["actions.follows_refresh"] == nil, "\(c)")
        #expect(outcome.metrics.statistic("follows_refresh", "count") == nil)
        #expect((c["http_errors.404"] ?? 0) + (c["http_errors.400"] ?? 0) >= c["action_failures.follows_refresh"] ?? 0, "\(c)")
        // The beacons went on all the same.
        #expect(outcome.accounting.delivered > 0 && outcome.accounting.lostTotal == 0)
    }
}
