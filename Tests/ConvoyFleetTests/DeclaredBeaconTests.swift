@testable import ConvoyFleet
import ConvoyJSON
import ConvoyMetrics
import ConvoyServer
import ConvoyTestSupport
import ConvoySodium
import ConvoyWire
import Foundation
import Testing

/// Beacon (examples/apps/beacon.yaml, its SQL in examples/migrations/beacon), an app that differs from Green Box on
/// every axis a file declares, run end to end on both stores: every row its phones wrote is opened by PyNaCl, with the
/// app's declaration alone, into the declared plaintext.
@Suite(.serialized) struct DeclaredBeaconTests {
    static let beacon = AppFileTests.root.appendingPathComponent("examples/apps/beacon.yaml").path
    static let python = AppFileTests.root.appendingPathComponent("scripts/.venv/bin/python3").path
    static let pythonRequired = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_PYTHON_TOOLS"] == "1"

    /// The embedded backend `convoy run` starts for Beacon: its folder alone, its purge.
    static func configuration(_ spec: DeclaredAppSpec) -> ServerConfiguration {
        var config = ServerConfiguration.testing
        config.jwtSecret = ProbeTests.secret
        config.app = "migrations"
        config.migrationsDirectory = spec.sqlFolder
        (config.purgeTable, config.purgeColumn) = ("beacons", spec.retention.column)
        return config
    }

    @Test func beaconDeclaresEveryAxisOtherwiseThanGreenBox() throws {
        let (b, g) = (try AppFile.load(Self.beacon), try AppFile.load(AppFileTests.greenBox))
        #expect(b.keys.table != g.keys.table && b.keys.encoding != g.keys.encoding && b.keys.perDevice != g.keys.perDevice)
        #expect(b.links.duringRun != g.links.duringRun && b.links.table != g.links.table && b.links.active != g.links.active && b.links.pending != g.links.pending)
        #expect(b.links.sharing == .inviter && g.links.sharing == .mutual)
        // Keys read through a function, not a select of the table.
        #expect(b.keys.lookup?.kind == .rpc(function: "beacon_keys") && g.keys.lookup == nil)
        // The link's steps: what each is, who makes it, and who accepts (Beacon's leader, Green Box's invitee).
        func kinds(_ l: DeclaredAppSpec.Links) -> [String] { l.steps.map { "\($0.write.kind)".components(separatedBy: "(").first ?? "" } }
        #expect(kinds(b.links) == ["insert", "rpc", "insert", "update"] && kinds(g.links) == ["insert", "update"])
        #expect(b.links.steps.map(\.byInvitee) == [false, true, true, false] && g.links.steps.map(\.byInvitee) == [false, true])
        #expect(!b.links.steps[b.links.acceptIndex].byInvitee && g.links.steps[g.links.acceptIndex].byInvitee)
        #expect(b.posting.table != g.posting.table && b.posting.bulk != g.posting.bulk && b.posting.sealed != g.posting.sealed
                && b.posting.phoneStamps != g.posting.phoneStamps)
        #expect(b.plaintext != g.plaintext && b.receiving.filter != g.receiving.filter && b.receiving.topic != g.receiving.topic)
        #expect(b.plaintext.placeholders.contains("battery.percent") && !g.plaintext.placeholders.contains { $0.hasPrefix("battery") })
        #expect(b.retention.column != g.retention.column && b.retention.purge == .delete(table: "beacons") && g.retention.purge == .backend)
    }

    /// Link steps in any order of the two makers, the inviter's first, one accepting; during the run the invitee, told
    /// over Realtime, accepts with the rest, so there they come in that order. Each mistake names its line.
    @Test func aLinksStepsAreReadInTheOrderDeclared() throws {
        let text = try String(contentsOfFile: Self.beacon, encoding: .utf8)
        let spec = try AppFile.parse(text, file: Self.beacon)
        #expect(spec.links.acceptIndex == 3 && spec.links.requestSteps.count == 3 && spec.links.acceptSteps.count == 1)
        // Unmarked, the invitee's first step accepts (as in Green Box).
        let unmarked = try AppFile.parse(text.replacingOccurrences(of: "      accepts: true\n", with: ""), file: Self.beacon)
        #expect(unmarked.links.acceptIndex == 1)
        let mistakes: [(String, String, String)] = [
            ("    - by: inviter               # an invite", "    - by: invitee               # an invite", "the inviter makes the first step"),
            ("      rpc: beacon_invite\n", "      rpc: beacon_invite\n      accepts: true\n", "one step accepts; links.steps[1].accepts does already"),
            ("  during: setup\n", "  during: run\n", "during: run, the inviter's steps come first"),
            ("      accepts: true\n", "      accepts: maybe\n", "expected true or false"),
        ]
        for (old, new, words) in mistakes {
            #expect(text.contains(old), "\(old)")
            do {
                _ = try AppFile.parse(text.replacingOccurrences(of: old, with: new), file: Self.beacon)
                Issue.record("\(new) was accepted")
            } catch {
                #expect(error.file == Self.beacon && error.line > 20 && error.description.contains(words), "\(error)")
            }
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: python) || pythonRequired, "PyNaCl not installed: run scripts/setup"),
          arguments: ProbeTests.Store.available)
    func everyRowBeaconsPhonesWroteOpensWithPyNaClIntoTheDeclaredPlaintext(_ store: ProbeTests.Store) async throws {
        let spec = try AppFile.load(Self.beacon)
        // Some follows left to decide later (at this seed and size, some pending, and leaders with several followers).
        var scenario = try FleetRunTests.scenario(devices: 12, steady: "5s", extra: "app: { file: \(Self.beacon) }")
        scenario.social.decideLater = 0.3
        let (outcome, (rows, follows)) = try await Self.run(scenario, Self.configuration(spec), on: store, drain: 3) { admin, service in
            (try await admin.select("beacons", query: "select=from_user,to_user,box_hex,sent_at&order=beacon_id.asc&limit=100000", token: service),
             try await admin.select("follows", query: "select=leader,follower,state,invite_id", token: service))
        }
        // Steps made as declared: every follow came with its leader's invite (invite, open, ask); a "decide later" stops
        // before the leader's acceptance, so exactly the graph's pending pairs are left asked.
        let pending = SocialGraph(devices: 12, social: scenario.social, seed: scenario.seed).pairs.filter(\.pending).count
        let asked = follows.filter { $0["state"]?.string == "asked" }
        #expect(pending > 0 && asked.count == pending && follows.allSatisfy { $0["invite_id"]?.string != nil }, "\(pending) pending, \(asked.count) asked, \(follows.count) follows, decide later \(scenario.social.decideLater)")
        let accepted = follows.filter { $0["state"]?.string == "accepted" }

        let c = outcome.metrics.counters
        #expect(outcome.accounting.closes && outcome.accounting.delivered > 20 && outcome.accounting.lostTotal == 0, "\(store): \(outcome.accounting.lost)")
        #expect(c["decrypt_failures"] == nil && c["received_unmatched"] == nil && c["http_errors"] == nil, "\(c)")
        #expect(rows.count == (c["sent"] ?? 0) + (c["sent_offline"] ?? 0), "every sealed update is a row")
        // A tick's rows in one insert: fewer posts than rows (Green Box's PRD posts one a friend).
        let posts = Int(outcome.metrics.statistic("post", "count") ?? 0)
        #expect(posts > 0 && posts < rows.count && c["http_requests"] ?? 0 >= posts, "\(posts) posts for \(rows.count) rows; \(pending) pending")
        // Its action, beside the beacons: made on the phones, timed under its own name, none failed.
        #expect((c["actions.follows_refresh"] ?? 0) > 0 && c["action_failures.follows_refresh"] == nil, "\(c)")
        #expect(outcome.metrics.statistic("follows_refresh", "count") == Double(c["actions.follows_refresh"] ?? -1))
        // Follows share one way (sharing: inviter): every beacon goes from the leader to its follower, none back.
        let followed = Set(accepted.map { "\($0["leader"]?.string ?? "")>\($0["follower"]?.string ?? "")" })
        let against = Set(accepted.map { "\($0["follower"]?.string ?? "")>\($0["leader"]?.string ?? "")" })
        let ways = rows.map { "\($0["from_user"]?.string ?? "")>\($0["to_user"]?.string ?? "")" }
        #expect(!accepted.isEmpty && ways.allSatisfy(followed.contains) && !ways.contains(where: against.contains), "\(store)")

        // PyNaCl, with the recipients' secret keys and the file's plaintext template, and nothing of Convoy's.
        var secrets: [String: JSONValue] = [:]
        for account in outcome.accounts { secrets[account.userID] = .string(account.keys.secretKey.exportBase64()) }
        let plaintext = try #require(JSONScanner.parse(spec.plaintext.render { .string("{{\($0)}}") }))
        let request = JSONValue.ordered(["plaintext": plaintext, "encoding": .string("hex"), "secrets": JSONValue(secrets),
                                         "rows": .array(rows.map { .ordered(["recipient": $0["to_user"] ?? .null, "box": $0["box_hex"] ?? .null]) })])
        let reply = try Self.python(script: "scripts/open_declared_rows.py", input: Array(request.text.utf8))
        let opened = try #require(JSONScanner.parse(reply))
        #expect(opened["opened"]?.int == rows.count)
        for (row, values) in zip(rows, opened["values"]?.items ?? []) {
            let lat = values["lat"]?.double ?? 999, lon = values["lon"]?.double ?? 999, ms = values["time.ms"]?.double ?? 0
            #expect((-90...90).contains(lat) && (-180...180).contains(lon) && (values["acc"]?.double ?? -1) >= 0, "\(values.text)")
            #expect(values["seq"]?.int != nil && values["sent_ns"] != nil, "Convoy's trace is declared, so it is there")
            // The battery model's level, a whole percent, as the file declares it.
            let battery = try #require(values["battery.percent"]?.int, "\(values.text)")
            #expect((0...100).contains(battery) && values["battery.percent"]?.text.contains(".") == false)
            // The phone's clock stamped the row (time: phone) within a second of the time it sealed.
            let sentAt = row["sent_at"]?.string.flatMap(CommitTimestamp.parse) ?? 0
            #expect(abs(sentAt - ms / 1000) < 5, "sent_at \(row["sent_at"]?.text ?? "") vs at_ms \(ms)")
        }
    }

    /// A fleet run of `scenario` against a server of `config` on `store` (the target holds the service key, for set-up
    /// steps made as: service); then `read` reads the backend as the service role. Both are stopped whatever happens.
    static func run<T: Sendable>(_ scenario: Scenario, _ config: ServerConfiguration, on store: ProbeTests.Store, drain: Double = 2,
                                 read: @Sendable (SupabaseREST, String) async throws -> T) async throws -> (FleetRun.Outcome, T) {
        let (server, _) = try await ProbeTests.start(config, on: store)
        let engine = try HTTPEngine()
        do {
            let target = SupabaseTarget(url: server.keys.url, anonKey: server.keys.anonKey, serviceKey: server.keys.serviceRoleKey)
            let outcome = try await FleetGate.run {
                try await FleetRun(.init(scenario: scenario, scenarioFile: "\(scenario.name).yaml", target: target,
                                         runID: "dcl" + UUID().uuidString.prefix(6).lowercased(), drain: drain), engine: engine, logger: .quiet).run()
            }
            let service = server.keys.serviceRoleKey
            let read = try await read(SupabaseREST(SupabaseHTTP(engine: engine, target: SupabaseTarget(url: server.keys.url, anonKey: service))), service)
            engine.shutdown()
            await server.stop()
            return (outcome, read)
        } catch {
            engine.shutdown()
            await server.stop()
            throw error
        }
    }

    static func python(script: String, input: [UInt8]) throws -> [UInt8] {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [AppFileTests.root.appendingPathComponent(script).path]
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        (process.standardInput, process.standardOutput, process.standardError) = (stdin, stdout, stderr)
        try process.run()
        stdin.fileHandleForWriting.write(Data(input))
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "PyNaCl: \(String(decoding: err, as: UTF8.self))")
        return Array(out)
    }
}
