import Foundation
import Testing

/// `convoy probe probes/survale.yaml` as a user runs it against `convoy serve
/// --app survale`, both as processes: nothing leaks, the impersonation the
/// catalogue expects is reported as a finding, and neither what it prints nor
/// what it writes holds a token or the service key.
@Suite struct SurvaleProbeCommandTests {
    @Test func theSurvaleCatalogueFindsNoLeakAndTheImpersonation() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--app", "survale", "--purge-every", "0")
        defer { server.stop() }
        let out = dir.appendingPathComponent("out")
        let catalogue = ProbeCommandTests.root.appendingPathComponent("probes/survale.yaml").path
        let r = try await CLI.detached("probe", catalogue, "--keys-file", keys, "--app", "survale", "--out", out.path)
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.contains("none leaked, 1 findings"), "\(r.stdout)")
        #expect(r.stdout.contains("finding impersonate_teammate_in_broadcast: "), "\(r.stdout)")

        let probes = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("probes.json"))) as? [String: Any])
        let list = try #require(probes["probes"] as? [[String: Any]])
        let ids = try String(contentsOfFile: catalogue, encoding: .utf8).components(separatedBy: "\n").filter { $0.hasPrefix("  - id: ") }
        #expect(list.count == ids.count && list.count >= 22)
        #expect(list.allSatisfy { ($0["tried"] as? Int ?? 0) > 0 && $0["leaked"] as? Int == 0 }, "\(list.map { ($0["id"] ?? "", $0["tried"] ?? "", $0["leaked"] ?? "") })")
        let impersonation = try #require(list.first { $0["id"] as? String == "impersonate_teammate_in_broadcast" })
        #expect(impersonation["findings"] as? Int == 1 && impersonation["category"] as? String == "policy_finding")
        let junit = try String(contentsOf: out.appendingPathComponent("junit.xml"), encoding: .utf8)
        #expect(junit.contains("failures=\"0\""))

        // No token, and not the service key, in what it printed or wrote.
        let written = try String(contentsOf: out.appendingPathComponent("probes.json"), encoding: .utf8)
        let keysFile = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: keys))) as? [String: Any])
        let serviceKey = try #require(keysFile["service_role_key"] as? String)
        for (name, text) in [("stdout", r.stdout), ("stderr", r.stderr), ("probes.json", written), ("junit.xml", junit)] {
            #expect(!containsJWT(text) && !text.contains(serviceKey), "\(name) holds a token")
        }
        #expect(containsJWT(serviceKey), "the check finds a real token")

        // Without --app the catalogue's name says whose backend it is.
        let inferred = try await CLI.detached("probe", catalogue, "--keys-file", keys)
        #expect(inferred.status == 0 && inferred.stdout.contains("none leaked, 1 findings"), "\(inferred.stdout)\n\(inferred.stderr)")
    }
}
