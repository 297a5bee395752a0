import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ConvoyTestSupport

/// `convoy run --dashboard-control`: the page stops the run as SIGINT does, and only with the token printed at start.
@Suite struct DashboardControlTests {
    static func stop(_ url: String, token: String?) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: url + "api/stop")!)
        request.httpMethod = "POST"
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    @Test func thePageStopsTheRunWithTheTokenAndNothingElseDoes() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("r")
        let (process, watch) = try CLI.start(["run", try CLI.longScenario(in: dir), "--out", out.path, "--drain", "1s", "--dashboard", "127.0.0.1:0",
                                              "--dashboard-control", "--dashboard-linger", "10m"])
        defer { if process.isRunning { process.terminate() } }
        let url = try #require(await watch.address(after: "dashboard at "), "\(watch.all)")
        let link = try #require(await watch.address(after: "the page may stop the run: "), "\(watch.all)")
        let token = try #require(link.components(separatedBy: "#token=").last)
        #expect(link.hasPrefix(url) && token.count == 32 && token.allSatisfy(\.isHexDigit), "\(link)")

        // No token, a wrong one, one a character short: refused, and the run goes on.
        for given in [nil, String(repeating: "0", count: 32), String(token.dropLast())] {
            let (status, body) = try await Self.stop(url, token: given)
            #expect(status == 401 && body.contains("token"), "\(given ?? "none"): \(status) \(body)")
        }
        #expect(process.isRunning)
        // The page: its Stop button, the token from the printed link, a confirmation; the run ends, interrupted.
        let page = try await DashboardTests.tool(DashboardTests.python, [DashboardTests.root.appendingPathComponent("scripts/browser/dashboard_stop.py").path, link])
        #expect(page.status == 0, "\(page.stdout)\n\(page.stderr)\n\(watch.all)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(page.stdout.utf8)) as? [String: Any], "\(page.stdout)")
        #expect(seen["button_shown"] as? Bool == true && (seen["confirm"] as? String ?? "").contains("marked incomplete"), "\(seen)")
        #expect(seen["said"] as? String == "stopping…" && (seen["verdict"] as? String ?? "").hasSuffix(": interrupted"), "\(seen)")
        #expect(seen["button_hidden_at_end"] as? Bool == true && seen["console_errors"] as? [String] == [], "\(seen)")
        // After the end, a stop has nothing to stop.
        #expect(try await Self.stop(url, token: token).0 == 409)
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 1, "\(watch.all)")
        #expect(watch.all.contains("stopped from the dashboard"))
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        #expect(summary["complete"] as? Bool == false && ((summary["accounting"] as? [String: Any])?["sent"] as? Int ?? 0) > 0)
        // The token is on the terminal only: nowhere in the results folder.
        for file in try FileManager.default.contentsOfDirectory(atPath: out.path) {
            let text = (try? String(contentsOfFile: out.appendingPathComponent(file).path, encoding: .utf8)) ?? ""
            #expect(!text.contains(token), "\(file) holds the token")
        }
    }

    @Test func withoutTheFlagThereIsNoStop() async throws {
        let r = try CLI.run("run", "scenarios/smoke.yaml", "--dashboard-control")
        #expect(r.status == 2 && r.stderr.contains("--dashboard-control goes with --dashboard"), "\(r.stderr)")
    }
}
