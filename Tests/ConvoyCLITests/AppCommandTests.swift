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
        #expect(r.stdout.contains("not tested  retention: purge"))
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
}
