import ConvoyTime
import ConvoySodium
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import PostgresNIO
import Testing
@testable import ConvoyServer
import ConvoyWire
import ConvoyTestSupport

/// The stores server tests run against: SQLite always, and PostgreSQL when a
/// test cluster is there — `make test` starts one (scripts/pg-test-cluster run)
/// and requires it, so PostgreSQL cases fail there rather than skip.
enum TestStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }

    static var all: [TestStore] { PostgresTestCluster.enabled ? [.sqlite, .postgres] : [.sqlite] }
}

enum PostgresTestCluster {
    static let url = ProcessInfo.processInfo.environment["CONVOY_TEST_POSTGRES_URL"]
    static let required = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_POSTGRES"] == "1"
    static var enabled: Bool { url != nil || required }

    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "CONVOY_TEST_POSTGRES_URL is not set: run the tests with `make test` (it starts a cluster with scripts/pg-test-cluster run)"
        }
    }

    /// A new, empty database on the test cluster, as a URL for `--database`.
    static func freshDatabase() async throws -> String {
        guard let url, var components = URLComponents(string: url) else { throw Missing() }
        let name = "convoy_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var logger = Logger(label: "test.pg")
        logger.logLevel = .critical
        let connection = try await PostgresConnection.connect(configuration: try PostgresURL(url).connection, id: 0, logger: logger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
        components.path = "/\(name)"
        return components.string!
    }
}

/// A `ReferenceServer` on a free loopback port, with a clock tests move by hand.
final class TestServer: Sendable {
    let server: ReferenceServer
    let clock: ManualClock
    let keys: ServerKeys
    private let task: Task<Void, any Error>

    struct Reply: @unchecked Sendable {
        let status: Int
        let headers: [String: String]
        let body: Data
        var json: Any? { body.isEmpty ? nil : try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) }
        var object: [String: Any] { json as? [String: Any] ?? [:] }
        var rows: [[String: Any]] { json as? [[String: Any]] ?? [] }
        var code: String? { object["code"] as? String }
    }

    let store: TestStore

    /// `app` replaces the configured app (a test's own, e.g. with a Storage policy).
    init(store: TestStore = .sqlite, app: (any ServerApp)? = nil, _ configure: (inout ServerConfiguration) -> Void = { _ in }) async throws {
        var config = ServerConfiguration.testing
        if store == .postgres {
            config.databasePath = try await PostgresTestCluster.freshDatabase()
            config.postgresConnections = 4
        }
        configure(&config)
        self.store = store
        let clock = ManualClock(Date())
        var logger = Logger(label: "test")
        // CONVOY_TEST_LOG=error (or info, debug) shows what the server logs, when chasing a failure.
        logger.logLevel = ProcessInfo.processInfo.environment["CONVOY_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        let server = try await ReferenceServer(configuration: config, serving: app, clock: clock, logger: logger)
        let (stream, continuation) = AsyncStream<ServerKeys>.makeStream()
        task = Task { try await server.run { keys in continuation.yield(keys) } }
        var iterator = stream.makeAsyncIterator()
        guard let keys = await iterator.next() else { throw CancellationError() }
        self.server = server
        self.clock = clock
        self.keys = keys
    }

    deinit { task.cancel() }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    /// One HTTP request. `token` goes in `Authorization: Bearer`; `apikey`
    /// defaults to the anon key (nil sends none).
    func request(_ method: String, _ path: String, body: Any? = nil, rawBody: Data? = nil, token: String? = nil,
                 apikey: String?? = .some(nil), headers: [String: String] = [:]) async throws -> Reply {
        var req = URLRequest(url: URL(string: keys.url + path)!)
        req.httpMethod = method
        switch apikey {
        case .none: break
        case .some(nil): req.setValue(keys.anonKey, forHTTPHeaderField: "apikey")
        case .some(let k?): req.setValue(k, forHTTPHeaderField: "apikey")
        }
        if let token { req.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (k, v) in headers { req.setValue(v, forHTTPHeaderField: k) }
        if let body {
            req.httpBody = try JSONSerialization.data(withJSONObject: body, options: [.fragmentsAllowed])
            req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        } else if let rawBody {
            req.httpBody = rawBody
            req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return try await Self.fetch(req)
    }

    /// Sends `req` and reads the answer: status, headers (lowercased names) and body.
    static func fetch(_ req: URLRequest) async throws -> Reply {
        let (data, response) = try await URLSession.shared.data(for: req)
        let http = response as! HTTPURLResponse
        var h: [String: String] = [:]
        for (k, v) in http.allHeaderFields { h[String(describing: k).lowercased()] = String(describing: v) }
        return Reply(status: http.statusCode, headers: h, body: data)
    }

    /// A signed-up user with a `users` row and a fresh key.
    struct User: Sendable {
        let id: String
        let token: String
        let refresh: String
        let email: String
    }

    func signUp(_ email: String = "u\(UUID().uuidString.prefix(8))@example.com", password: String = "secret123",
                withProfile: Bool = true) async throws -> User {
        let r = try await request("POST", "/auth/v1/signup", body: ["email": email, "password": password])
        #expect(r.status == 200, "signup: \(String(decoding: r.body, as: UTF8.self))")
        let user = User(id: (r.object["user"] as! [String: Any])["id"] as! String, token: r.object["access_token"] as! String,
                        refresh: r.object["refresh_token"] as! String, email: email)
        if withProfile {
            let row = try await request("POST", "/rest/v1/users", body: ["id": user.id, "public_key": try BoxKeyPair().publicKey.base64],
                                        token: user.token)
            #expect(row.status == 201)
        }
        return user
    }

    /// The claims of a JWT, unverified (the tests check what the server wrote).
    static func claims(_ jwt: String) -> [String: Any] {
        var part = String(jwt.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while part.count % 4 != 0 { part += "=" }
        return (try? JSONSerialization.jsonObject(with: Data(base64Encoded: part)!) as? [String: Any]) ?? [:]
    }
}

/// Runs a command to completion without blocking a cooperative thread (the
/// in-process server may be what the command talks to): output goes to files,
/// and the exit is awaited.
enum ChildProcess {
    static func run(_ path: String, _ args: [String]) async throws -> (status: Int32, out: String, err: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-run-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out"), err = dir.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        p.standardOutput = try FileHandle(forWritingTo: out)
        p.standardError = try FileHandle(forWritingTo: err)
        let status: Int32 = try await withCheckedThrowingContinuation { done in
            p.terminationHandler = { done.resume(returning: $0.terminationStatus) }
            do { try p.run() } catch { done.resume(throwing: error) }
        }
        return (status, (try? String(contentsOf: out, encoding: .utf8)) ?? "", (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }
}
