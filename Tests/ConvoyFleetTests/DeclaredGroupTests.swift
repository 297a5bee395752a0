@testable import ConvoyFleet
import ConvoyJSON
import ConvoyMetrics
import ConvoyServer
import ConvoyTestSupport
import ConvoyWire
import Foundation
import Testing

/// Huddle (examples/apps/huddle.yaml, its SQL in examples/migrations/huddle), a group app declared in a file: groups
/// created, filled and ended by the file's steps, each phone on its group's private channel (the SQL's policies on
/// realtime.messages decide who joins, on SQLite as on PostgreSQL), presence tracked, positions broadcast.
@Suite(.serialized) struct DeclaredGroupTests {
    static let huddle = AppFileTests.root.appendingPathComponent("examples/apps/huddle.yaml").path

    static func configuration(_ folder: String?) -> ServerConfiguration {
        var config = ServerConfiguration.testing
        config.jwtSecret = ProbeTests.secret
        config.app = "migrations"
        config.migrationsDirectory = folder
        return config
    }

    @Test func huddleDeclaresTheGroupShape() throws {
        let spec = try AppFile.load(Self.huddle)
        let group = try #require(spec.group)
        #expect(group.table == "huddles" && group.columns == .init(id: "huddle_id", owner: "lead_id", ended: "closed_at"))
        #expect(group.create.count == 2 && group.create[0].save.map(\.name) == ["group"] && group.join.map(\.byOwner) == [true] && group.end.count == 1)
        #expect(group.topic == "huddle:{{group.id}}" && group.event == "fix" && group.sender == "from" && group.presence?.map(\.key) == ["user", "role"])
        let scenario = try ScenarioFile.load(AppFileTests.root.appendingPathComponent("scenarios/huddle.yaml").path)
        let app = try #require(scenario.app.profile as? DeclaredGroupApp)
        #expect(app.shape == .group && !app.encrypts && app.carriesBattery && app.presence(for: "u1") == ["user": "u1", "role": "crew"])
    }

    /// A file beside huddle.yaml (its SQL folder resolves the same).
    static let mine = AppFileTests.root.appendingPathComponent("examples/apps/mine.yaml").path

    /// Each mistake, where it is: (text replaced, by, line, words in the message).
    static let mistakes: [(String, String, Int, String)] = [
        ("      save: {group: huddle_id}\n", "", 0, "save the new group's id as group"),
        ("  topic: \"huddle:{{group.id}}\"", "  topic: \"huddle:all\"", 34, "the topic names the group"),
        ("  topic: \"huddle:{{group.id}}\"", "  topic: \"huddle:{{me.id}}\"", 34, "unknown placeholder {{me.id}}"),
        ("  sender: from", "  sender: seq", 36, "the plaintext has a field seq already"),
        ("    - by: owner\n", "    - by: lead\n", 24, "by: owner or by: member"),
        ("broadcast:", "receiving: {}\nbroadcast:", 33, "receiving is for the pairwise shape"),
        ("shape: group", "shape: pairwise", 0, "groups is for a group app (shape: group)"),
    ]

    @Test(arguments: 0..<mistakes.count) func aGroupFilesMistakeIsAnErrorAtItsLine(_ i: Int) throws {
        let (old, new, line, words) = Self.mistakes[i]
        let text = try String(contentsOfFile: Self.huddle, encoding: .utf8)
        #expect(text.contains(old))
        do {
            _ = try AppFile.parse(text.replacingOccurrences(of: old, with: new), file: Self.mine)
            Issue.record("\(new) was accepted")
        } catch {
            #expect(error.file == Self.mine && (line == 0 || error.line == line) && error.description.contains(words), "\(error)")
        }
    }

    /// The group shape's rooms a file cannot declare yet are refused at their keys, never run as zeros.
    @Test(arguments: [("retention: {window: 1m}\n", "retention", "store nothing on the backend"),
                      ("social: {groups: 3..4, dm_every: 30s}\n", "social.dm_every", "not declarable yet"),
                      ("social: {groups: 3..4, join_by_request: 10%}\n", "social.join_by_request", "not declarable yet"),
                      ("groups: [{name: a, count: 4, message_every: 30s}]\n", "groups[0].message_every", "it has no chat")])
    func aKeyAGroupFileCannotServeIsRefused(_ extra: String, _ path: String, _ words: String) throws {
        var text = "name: s\napp: {file: \(Self.huddle)}\n"
        if !extra.hasPrefix("groups:") { text += "groups: [{name: a, count: 4}]\n" }
        if !extra.hasPrefix("social:") { text += "social: {groups: 3..4}\n" }
        do {
            _ = try ScenarioFile.parse(text + extra, file: "s.yaml")
            Issue.record("\(extra) was accepted")
        } catch {
            #expect(error.path == path && error.description.contains(words), "\(error)")
        }
        // The control: without the key, the scenario reads.
        _ = try ScenarioFile.parse(text + (extra.hasPrefix("groups:") ? "groups: [{name: a, count: 4}]\n" : extra.hasPrefix("social:") ? "social: {groups: 3..4}\n" : ""),
                                   file: "s.yaml")
    }

    @Test(arguments: ProbeTests.Store.available)
    func huddlesPhonesHearTheirGroupOnItsPrivateChannelAndEveryLeadClosesIt(_ store: ProbeTests.Store) async throws {
        let spec = try AppFile.load(Self.huddle)
        let scenario = try Self.crews("huddle-test", seed: 5, phones: 10, steady: "4s")
        let (outcome, huddles) = try await DeclaredBeaconTests.run(scenario, Self.configuration(spec.sqlFolder), on: store) { admin, service in
            try await admin.select("huddles", query: "select=huddle_id,lead_id,closed_at", token: service)
        }
        let c = outcome.metrics.counters
        #expect(outcome.accounting.closes && outcome.accounting.delivered > 30 && outcome.accounting.lostTotal == 0, "\(store): \(outcome.accounting.lost)")
        #expect(c["decrypt_failures"] == nil && c["received_unmatched"] == nil && c["received_from_strangers"] == nil, "\(c)")
        #expect(c["group_not_joined"] == nil && c["http_errors"] == nil, "\(store): every channel joined, every set-up step went through: \(c)")
        #expect((c["presence_tracks"] ?? 0) == 10 && outcome.metrics.statistic("presence_convergence", "count") ?? 0 > 0, "\(c)")
        #expect(outcome.metrics.statistic("broadcast_ack", "count") ?? 0 > 0)
        // Every huddle the run opened was closed by its lead, as the file's end step says.
        #expect(huddles.count >= 2 && huddles.allSatisfy { $0["closed_at"] != nil && $0["closed_at"] != .null }, "\(huddles)")
        let ended = try #require(outcome.groups)
        #expect(ended.groups == huddles.count && ended.endedByOwner == huddles.count && ended.findings.isEmpty, "\(ended)")
    }

    /// `convoy app check`'s group steps on both stores, and its control: with the SQL's channel policies opened to anyone,
    /// the stranger's join goes through and the check fails there; as shipped, the stranger is refused.
    @Test(arguments: ProbeTests.Store.available)
    func theCheckRefusesAStrangerOnlyWhileTheChannelPolicyHolds(_ store: ProbeTests.Store) async throws {
        let spec = try AppFile.load(Self.huddle)
        let dir = try Self.openChannelFolder(spec)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (folder, holds) in [(spec.sqlFolder!, true), (dir.path, false)] {
            let (server, _) = try await ProbeTests.start(Self.configuration(folder), on: store)
            let engine = try HTTPEngine()
            let target = SupabaseTarget(url: server.keys.url, anonKey: server.keys.anonKey, serviceKey: server.keys.serviceRoleKey)
            let steps = await AppCheck.run(DeclaredGroupApp(spec), target: target, engine: engine, wait: 5)
            engine.shutdown()
            await server.stop()
            let stranger = steps.first { $0.name == "channel: stranger refused" }
            #expect(stranger?.passed == holds, "\(store) \(holds ? "as shipped" : "opened"): \(steps.map { "\($0.name): \($0.detail)" })")
            if holds {
                #expect(steps.allSatisfy { $0.passed == true }, "\(store): \(steps.map { "\($0.name) \($0.passed as Any): \($0.detail)" })")
                #expect(steps.map(\.name) == ["sign up", "groups: create, join", "channel: join", "channel: stranger refused", "presence", "broadcast",
                                              "receive", "read", "groups: end", "groups: ended"])
            } else {
                #expect(steps.last?.name == "channel: stranger refused" && steps.last?.detail.contains("let anyone in") == true)
            }
        }
    }

    /// Huddle's crews of 3–4 walking, sharing every 600–900 ms, with `extra` keys.
    static func crews(_ name: String, seed: Int, phones: Int, steady: String, extra: String = "") throws -> Scenario {
        try ScenarioFile.parse("""
            name: \(name)
            seed: \(seed)
            app: {file: \(Self.huddle)}
            groups: [{name: crew, count: \(phones), tracks: {synthetic: walk}, cadence: 600ms..900ms}]
            social: {groups: 3..4}
            timeline: {arrival_rate: 40/s, steady: \(steady), ramp_down: 500ms}

            """ + extra, file: "\(name).yaml")
    }

    /// Huddle's SQL with the policy that keeps a huddle's channel to its crew opened to anyone signed in.
    static func openChannelFolder(_ spec: DeclaredAppSpec) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("huddle-open-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let sql = try String(contentsOfFile: spec.sqlFolder! + "/001_huddle.sql", encoding: .utf8)
        let open = sql.replacingOccurrences(of: "USING (realtime.messages.extension IN ('broadcast', 'presence') AND public.in_huddle_channel(realtime.topic()))",
                                            with: "USING (true)")
        #expect(open != sql)
        try open.write(to: dir.appendingPathComponent("001_huddle.sql"), atomically: true, encoding: .utf8)
        return dir
    }

    /// Hostile phones in a declared group app's run (`hostile:` with probes/huddle.yaml): members of one huddle, cast
    /// from the run's own huddles, try the other huddles' channel, rows and crews while the crews share. As shipped,
    /// every probe is tried and denied and the crews' delivery is whole; the control opens the channel policy, and the
    /// same run finds the leak.
    @Test func hostilePhonesProbeTheRunsOwnHuddlesAndFindAnOpenedChannel() async throws {
        let spec = try AppFile.load(Self.huddle)
        let hostile = "hostile: {share: 10%, catalogue: \(AppFileTests.root.appendingPathComponent("probes/huddle.yaml").path), at: 1s}\n"
        // Steady long enough for a probe pass to end before the leads close their huddles, on a loaded machine too: one that
        // ran into the ramp-down would find the victim's huddle closed, and its control would say it tested nothing.
        let scenario = try Self.crews("huddle-hostile", seed: 21, phones: 16, steady: "10s", extra: hostile)
        let dir = try Self.openChannelFolder(spec)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (folder, holds) in [(spec.sqlFolder!, true), (dir.path, false)] {
            let (outcome, _) = try await DeclaredBeaconTests.run(scenario, Self.configuration(folder), on: .sqlite) { _, _ in () }
            let probes = try #require(outcome.probes)
            let channel = try #require(probes.probes.first { $0.id == "join_victim_huddle_channel" })
            #expect(probes.hostileDevices >= 2 && probes.probes.allSatisfy { $0.tried > 0 && $0.errors == 0 },
                    "every probe had its chance: \(probes.probes.map { ($0.id, $0.tried, $0.errors, $0.notes ?? []) })")
            if holds {
                #expect(probes.leaks == 0 && probes.probes.allSatisfy { $0.denied == $0.tried }, "\(probes.probes.map { ($0.id, $0.leaked) })")
                #expect(outcome.accounting.closes && outcome.accounting.delivered > 50 && outcome.accounting.lostTotal == 0, "\(outcome.accounting.lost)")
            } else {
                #expect(channel.leaked > 0, "opened, the victim's channel let the attacker in: \(channel)")
            }
        }
    }
}
