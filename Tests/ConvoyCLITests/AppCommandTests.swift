import Foundation
import Testing

/// `convoy app check` and a scenario naming a declared app, run as a user runs them.
@Suite struct AppCommandTests {
    static let greenBox = DashboardTests.root.appendingPathComponent("examples/apps/greenbox-prd.yaml").path

    @Test func checkWalksEveryStepOfTheShippedGreenBox() async throws {
        let r = try await CLI.detached("app", "check", Self.greenBox)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        for step in ["sign up", "keys: publish", "keys: lookup", "receive: subscribe", "link: request", "link: told", "link: accept", "post", "receive",
                     "open", "catch up", "retention: column"] {
            #expect(r.stdout.contains("ok          \(step):"), "\(step): \(r.stdout)")
        }
        #expect(r.stdout.contains("not tested  retention: purge: not tested here: the backend purges by itself"), "\(r.stdout)")
    }

    @Test func checkNamesTheStepThatFailsWithTheAnswer() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("wrong-column.yaml").path
        let text = try String(contentsOfFile: Self.greenBox, encoding: .utf8)
        try text.replacingOccurrences(of: "payload: \"{{sealed}}\"", with: "sealed_box: \"{{sealed}}\"").write(toFile: file, atomically: true, encoding: .utf8)
        let r = try await CLI.detached("app", "check", file)
        #expect(r.status == 1)
        #expect(r.stdout.contains("ok          link: accept") && r.stdout.contains("FAILED      post: POST /rest/v1/encrypted_locations"), "\(r.stdout)")
        #expect(r.stdout.contains("sealed_box"), "the server's answer names the column it lacks: \(r.stdout)")
        #expect(!r.stdout.contains("receive: over"), "nothing after the failure is claimed")
    }

    /// Beacon on the embedded backend (its SQL folder on SQLite): one way, its action made once; an action on a table the
    /// backend lacks fails the check at that action, with the answer.
    @Test func checkMakesEachActionOnceAndNamesOneThatFails() async throws {
        let beacon = DashboardTests.root.appendingPathComponent("examples/apps/beacon.yaml").path
        let r = try await CLI.detached("app", "check", beacon)
        #expect(r.status == 0 && r.stdout.contains("ok          action: follows_refresh: 1 request(s)")
                && r.stdout.contains("ok          sharing: one way: the side that does not share is refused"), "\(r.stdout)\(r.stderr)")
        // The purge as convoy serve makes it (delete: beacons, the file's two minutes): a row the phone stamped a minute
        // past the window, seen before the purge, is gone after it, and the row just posted stays.
        #expect(r.stdout.contains("ok          retention: purge: deleted beacons's rows with sent_at older than 120 s: a row stamped a minute past "
                                  + "the window went; the row just posted stayed"), "\(r.stdout)")
        let broken = URL(fileURLWithPath: beacon).deletingLastPathComponent().appendingPathComponent("beacon-check-\(UUID().uuidString.prefix(6)).yaml").path
        try String(contentsOfFile: beacon, encoding: .utf8).replacingOccurrences(of: "      - select: follows\n", with: "      - select: no_such_table\n")
            .write(toFile: broken, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: broken) }
        let failed = try await CLI.detached("app", "check", broken)
        #expect(failed.status == 1 && failed.stdout.contains("FAILED      action: follows_refresh:") && failed.stdout.contains("no_such_table"),
                "\(failed.stdout)\(failed.stderr)")
    }

    /// Huddle, a group app, on the embedded backend: its groups made and ended by its steps, its private channel joined by
    /// the group and refused to a stranger, presence seen, a broadcast heard and read back.
    @Test func checkWalksAGroupAppsSteps() async throws {
        let huddle = DashboardTests.root.appendingPathComponent("examples/apps/huddle.yaml").path
        let r = try await CLI.detached("app", "check", huddle)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        for step in ["sign up", "groups: create, join", "channel: join", "channel: stranger refused", "presence", "broadcast", "receive", "read",
                     "groups: end", "groups: ended"] {
            #expect(r.stdout.contains("ok          \(step):"), "\(step): \(r.stdout)")
        }
    }

    @Test func aBadAppFileIsBadInputAtItsLineAndColumn() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("bad.yaml").path
        let text = try String(contentsOfFile: Self.greenBox, encoding: .utf8)
        try text.replacingOccurrences(of: "  encoding: base64\n", with: "  encoding: 64\n").write(toFile: file, atomically: true, encoding: .utf8)
        let check = try CLI.run("app", "check", file)
        #expect(check.status == 2 && check.stderr.contains("\(file):15:13: keys.encoding"), "\(check.stderr)")
        let scenario = dir.appendingPathComponent("s.yaml").path
        try "name: s\napp: {file: bad.yaml}\ngroups: [{name: a, count: 2}]\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        let run = try CLI.run("run", scenario, "--duration", "1s")
        #expect(run.status == 2 && run.stderr.contains("bad.yaml:15:13: keys.encoding"), "\(run.stderr)")
    }

    /// The first ```yaml block after `heading` in docs/apps.md.
    static func block(after heading: String) throws -> String {
        let doc = try String(contentsOf: DashboardTests.root.appendingPathComponent("docs/apps.md"), encoding: .utf8)
        let section = try #require(doc.range(of: heading))
        let open = try #require(doc.range(of: "```yaml\n", range: section.upperBound..<doc.endIndex))
        let close = try #require(doc.range(of: "```", range: open.upperBound..<doc.endIndex))
        return String(doc[open.upperBound..<close.lowerBound])
    }

    /// docs/apps.md, as a team would follow it: an empty folder, the PRD's SQL, the file on the page, the check, the run.
    @Test func theWalkthroughInDocsAppsRunsAsWritten() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sql = dir.appendingPathComponent("myapp/sql")
        try FileManager.default.createDirectory(at: sql, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: DashboardTests.root.appendingPathComponent("examples/greenbox-prd-verbatim.sql"),
                                         to: sql.appendingPathComponent("001_schema.sql"))
        let app = dir.appendingPathComponent("myapp/app.yaml").path, load = dir.appendingPathComponent("myapp/load.yaml").path
        try Self.block(after: "## 2. The file").write(toFile: app, atomically: true, encoding: .utf8)
        try Self.block(after: "## 5. A scenario, and a run").write(toFile: load, atomically: true, encoding: .utf8)
        let check = try await CLI.detached("app", "check", app)
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("ok          open: the sealed box opens into the declared plaintext"), "\(check.stdout)")
        #expect(check.stdout.contains("ok          retention: purge: deleted encrypted_locations's rows with created_at older than 600 s: "
                                      + "that an old row goes is not tested here (the server stamps created_at)"), "\(check.stdout)")
        let run = try await CLI.detached("run", load, "--devices", "8", "--duration", "8s", "--out", dir.appendingPathComponent("out").path)
        #expect(run.status == 0, "\(run.stdout.suffix(3000))\(run.stderr)")
        #expect(run.stdout.contains("Every update is accounted for"), "\(run.stdout.suffix(2000))")
    }
}

/// `convoy probe` with an app declared in a file: the cast pairs as the file says, and a policy taken away is found.
@Suite struct DeclaredProbeCommandTests {
    /// `catalogue` run with `--app` against `convoy serve --app-file` of the shipped `examples/apps/<app>.yaml`, then of a
    /// copy whose SQL (`examples/migrations/<app>/001_<app>.sql`) has each of `edits` made: the two runs' results.
    static func probe(_ app: String, weakenedBy edits: [(String, String)]) async throws -> (held: CLI.Result, weakened: CLI.Result) {
        let root = DashboardTests.root
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = root.appendingPathComponent("examples/apps/\(app).yaml").path, catalogue = root.appendingPathComponent("probes/\(app).yaml").path
        let weak = dir.appendingPathComponent("weak")
        try FileManager.default.createDirectory(at: weak, withIntermediateDirectories: true)
        var sql = try String(contentsOf: root.appendingPathComponent("examples/migrations/\(app)/001_\(app).sql"), encoding: .utf8)
        for (old, new) in edits {
            #expect(sql.contains(old), "\(app)'s SQL has \(old)")
            sql = sql.replacingOccurrences(of: old, with: new)
        }
        try sql.write(to: weak.appendingPathComponent("001_\(app).sql"), atomically: true, encoding: .utf8)
        let weakFile = dir.appendingPathComponent("\(app).yaml").path
        try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: "sql: ../migrations/\(app)", with: "sql: weak")
            .write(toFile: weakFile, atomically: true, encoding: .utf8)
        var results: [CLI.Result] = []
        for (name, served) in [("keys", file), ("weak-keys", weakFile)] {
            let keys = dir.appendingPathComponent("\(name).json").path
            let server = try await ServeProcess.start(keys: keys, "--app-file", served, "--purge-every", "0")
            let r = try await CLI.detached(["probe", catalogue, "--app", served, "--keys-file", keys])
            server.stop()
            results.append(CLI.Result(status: r.status, stdout: r.stdout, stderr: r.stderr + "\n" + server.diagnosis))
        }
        return (results[0], results[1])
    }

    @Test func beaconsCatalogueIsDeniedAndALeakIsFoundWhenThePolicyIsGone() async throws {
        // The control: Beacon's SQL with its read policy opened to everyone, and beacons let both ways as if follows were mutual.
        let (held, leaked) = try await Self.probe("beacon", weakenedBy: [
            ("USING (to_user = auth.uid())", "USING (true)"),
            ("public.beacon_follows(to_user, from_user));", "(public.beacon_follows(to_user, from_user) OR public.beacon_follows(from_user, to_user)));"),
        ])
        #expect(held.status == 0 && held.stdout.contains("none leaked") && !held.stdout.contains("LEAK "), "\(held.stdout)\(held.stderr)")
        #expect(leaked.status == 99 && leaked.stdout.contains("LEAK read_victim_beacons") && leaked.stdout.contains("LEAK beacon_against_the_follow"),
                "\(leaked.stdout)\(leaked.stderr)")
    }

    /// Huddle, a group app: its channel, huddles and crews hold against a member of another huddle; with the channel's
    /// read policy opened to anyone and the crew's insert policy no longer asking for the lead, the same catalogue finds
    /// both leaks, and the policies left alone still hold.
    @Test func huddlesCatalogueIsDeniedAndLeaksAreFoundWhenItsPoliciesAreOpened() async throws {
        let (held, leaked) = try await Self.probe("huddle", weakenedBy: [
            ("USING (realtime.messages.extension IN ('broadcast', 'presence') AND public.in_huddle_channel(realtime.topic()))", "USING (true)"),
            ("WITH CHECK (added_by = auth.uid() AND public.leads_huddle(huddle_id))", "WITH CHECK (added_by = auth.uid())"),
        ])
        #expect(held.status == 0 && held.stdout.contains("none leaked") && !held.stdout.contains("LEAK "), "\(held.stdout)\(held.stderr)")
        #expect(leaked.status == 99 && leaked.stdout.contains("LEAK join_victim_huddle_channel") && leaked.stdout.contains("LEAK join_victim_huddle_uninvited"),
                "\(leaked.stdout)\(leaked.stderr)")
        #expect(!leaked.stdout.contains("LEAK close_victim_huddle") && !leaked.stdout.contains("LEAK read_victim_huddle"), "the policies left alone hold: \(leaked.stdout)")
    }
}
