import Foundation
import Testing

/// Green Box's schema and policies as PostgreSQL runs them (the platform's
/// Sources/ConvoyServer/Storage/PostgreSQL, then the app's
/// Sources/ConvoyServer/Apps/GreenBox/GreenBoxSQL), verified inside a real
/// PostgreSQL: SQL/rls_matrix.sql acts as users with `SET LOCAL ROLE` and
/// `request.jwt.claims`, as the PostgreSQL store does per request.
@Suite struct PostgresPolicyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let required = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_POSTGRES"] == "1"
    static var available: Bool {
        (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.contains { v in
            FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\(v)/bin/initdb")
        } ?? false
    }

    @Test(.enabled(if: required || available, "PostgreSQL is not installed: run scripts/setup"))
    func rlsMatrixHoldsInPostgreSQL() async throws {
        #expect(Self.available, "PostgreSQL server binaries are missing: run scripts/setup")
        let script = Self.root.appendingPathComponent("scripts/pg-test-cluster").path
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-pg-\(UUID())").path
        let started = try await ChildProcess.run(script, ["start", dir])
        #expect(started.status == 0, "the PostgreSQL cluster did not start: \(started.err)")
        guard started.status == 0 else { return }
        let cleanup = { _ = try? await ChildProcess.run(script, ["stop", dir]) }
        let url = started.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let migrations = ["Sources/ConvoyServer/Storage/PostgreSQL/000_platform.sql",
                          "Sources/ConvoyServer/Apps/GreenBox/GreenBoxSQL/001_greenbox.sql",
                          "Sources/ConvoyServer/Apps/GreenBox/GreenBoxSQL/003_invite_codes.sql"].map { Self.root.appendingPathComponent($0).path }
        for _ in 0..<2 {  // twice: the migrations are idempotent
            for migration in migrations {
                let applied = try await ChildProcess.run("/usr/bin/psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-f", migration])
                #expect(applied.status == 0, "\(migration): \(applied.err)")
            }
        }
        let matrix = try await ChildProcess.run("/usr/bin/psql", [url, "-q", "-f", Self.root.appendingPathComponent("Tests/ConvoyServerTests/SQL/rls_matrix.sql").path])
        await cleanup()
        #expect(matrix.status == 0, "\(matrix.err.split(separator: "\n").filter { !$0.contains("check ok") }.joined(separator: "\n"))")
        let passed = matrix.err.components(separatedBy: "check ok:").count - 1
        #expect(passed == 59, "\(passed) checks passed: every SELECT convoy_test.expect… in rls_matrix.sql")
        #expect(matrix.out.contains(#"Asynchronous notification "convoy_changes""#) && matrix.out.contains(#""table" : "encrypted_locations""#)
                    && matrix.out.contains(#""key" : "#), "a committed insert is announced with its key")
    }

    /// Naar's Cars' policies (examples/migrations/naarscars, the seed's verbatim) as PostgreSQL runs them:
    /// SQL/naarscars_matrix.sql asserts what each does, its holes and its recursion included, and its triggers' limits.
    @Test(.enabled(if: required || available, "PostgreSQL is not installed: run scripts/setup"))
    func naarscarsMatrixHoldsInPostgreSQL() async throws {
        let script = Self.root.appendingPathComponent("scripts/pg-test-cluster").path
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-pg-\(UUID())").path
        let started = try await ChildProcess.run(script, ["start", dir])
        #expect(started.status == 0, "the PostgreSQL cluster did not start: \(started.err)")
        guard started.status == 0 else { return }
        let url = started.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let folder = Self.root.appendingPathComponent("examples/migrations/naarscars")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        let migrations = [Self.root.appendingPathComponent("Sources/ConvoyServer/Storage/PostgreSQL/000_platform.sql").path]
            + files.map { folder.appendingPathComponent($0).path }
        for migration in migrations {
            let applied = try await ChildProcess.run("/usr/bin/psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-f", migration])
            #expect(applied.status == 0, "\(migration): \(applied.err)")
        }
        let matrix = try await ChildProcess.run("/usr/bin/psql", [url, "-q", "-f", Self.root.appendingPathComponent("Tests/ConvoyServerTests/SQL/naarscars_matrix.sql").path])
        _ = try? await ChildProcess.run(script, ["stop", dir])
        #expect(matrix.status == 0, "\(matrix.err.split(separator: "\n").filter { !$0.contains("check ok") }.joined(separator: "\n"))")
        let passed = matrix.err.components(separatedBy: "check ok:").count - 1
        #expect(passed == 127, "\(passed) checks passed: every check of naarscars_matrix.sql")
    }
}
