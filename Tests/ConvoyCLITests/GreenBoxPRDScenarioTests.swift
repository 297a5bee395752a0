import Foundation
import Testing

/// scenarios/greenbox-prd.yaml (the PRD's payload, the PRD's pairing on the phones
/// during the run) passes on the embedded backend and against a separate
/// `convoy serve`, shortened with --devices and --duration.
@Suite(.serialized) struct GreenBoxPRDScenarioTests {
    static let scenario = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scenarios/greenbox-prd.yaml").path

    static func check(_ out: URL, _ r: CLI.Result) throws {
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        let counters = try #require(summary["counters"] as? [String: Int])
        #expect((counters["pairing_requests"] ?? 0) > 10 && (counters["pairing_accepted"] ?? 0) > 0 && counters["pairing_failures"] == nil,
                "\(counters.filter { $0.key.hasPrefix("pairing") })")
        #expect((counters["pairing_decided_later"] ?? 0) > 0, "some left at decide later")
        #expect((counters["delivered"] ?? 0) > 0 && counters["received_unmatched"] == nil)
        let histograms = try #require(summary["latency_ms"] as? [String: Any])
        #expect(histograms["pairing_accept"] != nil && histograms["pairing_first_update"] != nil, "\(histograms.keys.sorted())")
    }

    @Test func passesOnTheEmbeddedBackend() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--devices", "20", "--duration", "25s", "--out", out.path)
        try Self.check(out, r)
    }

    @Test func passesAgainstASeparateConvoyServe() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys)
        defer { server.stop() }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--keys-file", keys, "--devices", "20", "--duration", "25s", "--out", out.path)
        try Self.check(out, r)
    }
}
