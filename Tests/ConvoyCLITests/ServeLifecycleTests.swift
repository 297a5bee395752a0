import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ConvoyTestSupport

/// `convoy serve` with PostgreSQL runs every part of the server — the HTTP
/// application, the PostgreSQL client and change feed, the retention purge —
/// as services of one group, and SIGTERM stops them all gracefully (exit 0).
@Suite(.timeLimit(.minutes(3)))
struct ServeLifecycleTests {
    static let postgresURL = ProcessInfo.processInfo.environment["CONVOY_TEST_POSTGRES_URL"]
    static let required = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_POSTGRES"] == "1"

    /// `psql URL -Atc SQL`: its status and output.
    static func psql(_ url: String, _ sql: String) throws -> (status: Int32, out: String) {
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        p.arguments = [url, "-Atc", sql]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = Pipe()
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test(.enabled(if: postgresURL != nil || required, "no PostgreSQL test cluster (make test starts one)"))
    func withPostgreSQLEveryPartRunsAndSIGTERMStopsThemAll() async throws {
        let base = try #require(Self.postgresURL, "CONVOY_TEST_POSTGRES_URL is not set: run make test")
        let name = "convoy_cli_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        #expect(try Self.psql(base, "CREATE DATABASE \(name)").status == 0)
        var components = try #require(URLComponents(string: base))
        components.path = "/\(name)"
        let database = try #require(components.string)

        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keysPath = dir.appendingPathComponent("keys.json").path
        let process = TestProcess()
        process.executableURL = CLI.binary
        process.arguments = ["serve", "--port", "0", "--database", database, "--keys-file", keysPath, "--purge-every", "100ms"]
        let (out, err) = (Pipe(), Pipe())
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // Readiness (bounded waits, not timing): the keys file, then a purge logged.
        var deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: keysPath), ContinuousClock.now < deadline, process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        let keys = try #require(try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: keysPath))) as? [String: String])
        let url = try #require(keys["url"])
        // A sign-up: the PostgreSQL client's pool, and Argon2id on NIO's thread pool.
        var signUp = URLRequest(url: URL(string: url + "/auth/v1/signup")!)
        signUp.httpMethod = "POST"
        signUp.setValue(keys["anon_key"], forHTTPHeaderField: "apikey")
        signUp.setValue("application/json", forHTTPHeaderField: "Content-Type")
        signUp.httpBody = Data(#"{"email":"lifecycle@example.com","password":"secret123"}"#.utf8)
        let (_, response) = try await URLSession.shared.data(for: signUp)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        deadline = ContinuousClock.now + .seconds(60)
        var purges = 0
        while purges == 0, ContinuousClock.now < deadline, process.isRunning {
            purges = Int(try Self.psql(database, "SELECT count(*) FROM purge_log").out) ?? 0
            if purges == 0 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(purges > 0, "the purge service ran")

        process.terminate()  // SIGTERM: a graceful shutdown of every service
        process.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(stderr)")
        #expect(!stderr.contains("error"), "\(stderr)")
        #expect(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("listening on \(url)"))
    }
}
