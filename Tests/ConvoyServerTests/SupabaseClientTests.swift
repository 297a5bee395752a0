import Foundation
import Testing
@testable import ConvoyServer
import ConvoyTestSupport

/// The official Supabase Python client (supabase-py 2.34.1, from PyPI via
/// scripts/setup) against `convoy serve`, unchanged: scripts/supabase_compat.py.
@Suite struct SupabaseClientTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent("scripts/.venv/bin/python3").path
    static let required = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_PYTHON_TOOLS"] == "1"
    static var available: Bool {
        guard FileManager.default.isExecutableFile(atPath: python) else { return false }
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = ["-c", "import supabase"]
        p.standardError = Pipe()
        try? p.run()
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    @Test(.enabled(if: required || available, "supabase-py is not installed: run scripts/setup"), arguments: TestStore.all)
    func supabasePyWorksUnchanged(store: TestStore) async throws {
        #expect(Self.available, "supabase-py is missing from scripts/.venv: run scripts/setup")
        let s = try await TestServer(store: store)
        let (status, text, errors) = try await ChildProcess.run(
            Self.python, [Self.root.appendingPathComponent("scripts/supabase_compat.py").path, s.keys.url, s.keys.anonKey,
                          s.keys.serviceRoleKey])
        #expect(status == 0, "\(text)\n\(errors.suffix(2000))")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String])
        for step in ["auth", "rest", "rpc", "realtime", "rls", "storage"] { #expect(result[step] == "ok", "\(step): \(result)") }
        #expect(result["supabase_py"] == "2.34.1")
        await s.stop()
    }

    /// Survale's flows through supabase-py: private channel (`private=True`), `track`, `send_broadcast`,
    /// a stranger refused, Storage upload and download: scripts/survale_compat.py.
    @Test(.enabled(if: required || available, "supabase-py is not installed: run scripts/setup"), arguments: TestStore.all)
    func supabasePyWorksWithSurvaleUnchanged(store: TestStore) async throws {
        #expect(Self.available, "supabase-py is missing from scripts/.venv: run scripts/setup")
        let s = try await TestServer(store: store) { $0.app = "survale" }
        let (status, text, errors) = try await ChildProcess.run(
            Self.python, [Self.root.appendingPathComponent("scripts/survale_compat.py").path, s.keys.url, s.keys.anonKey, s.keys.serviceRoleKey])
        #expect(status == 0, "\(text)\n\(errors.suffix(2000))")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String])
        for step in ["provision", "lifecycle", "presence", "broadcast", "private", "storage"] { #expect(result[step] == "ok", "\(step): \(result)") }
        await s.stop()
    }
}
