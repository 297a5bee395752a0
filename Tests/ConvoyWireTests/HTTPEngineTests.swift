import ConvoyServer
import ConvoyWire
import Foundation
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The engine against a real `convoy serve` on a free port, each test on both
/// paths plain HTTP can take: NIO's loops (`LoopHTTP`, the default) and libcurl's thread.
@Suite struct HTTPEngineTests {
    static let paths = [true, false]

    /// A reference server on a free loopback port, and its keys.
    static func server() async throws -> EmbeddedServer {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return try await EmbeddedServer.start(.testing, logger: logger)
    }

    static func get(_ keys: ServerKeys, _ path: String, headers: [(name: String, value: String)] = []) -> HTTPRequest {
        HTTPRequest(url: keys.url + path, headers: [("apikey", keys.anonKey)] + headers)
    }

    @Test(arguments: paths) func manyConcurrentTransfersOnOneThread(onLoops: Bool) async throws {
        let server = try await Self.server()
        let keys = server.keys
        let engine = try HTTPEngine(plainHTTPOnLoops: onLoops)
        let statuses = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            // What is asserted is that all 300 complete, each with its own answer, not how fast: the test run's
            // first minute, every suite starting at once on two cores, stalled this process for 20 s and more
            // and the default 30 s timeout failed it. The bound stays as a bound.
            var request = Self.get(keys, "/rest/v1/users?select=id")
            request.timeout = 300
            for _ in 0..<300 {
                group.addTask { [request] in
                    let r = try await engine.send(request)
                    return (r.status, String(decoding: r.body, as: UTF8.self))
                }
            }
            return try await group.reduce(into: [(Int, String)]()) { $0.append($1) }
        }
        #expect(statuses.count == 300 && statuses.allSatisfy { $0 == (200, "[]") })
        engine.shutdown()
        await server.stop()
    }

    /// Beyond `maxActive`, transfers wait their turn in order; one cancelled while
    /// it waits ends at once, and a freed slot lets the next one in.
    @Test(arguments: paths) func transfersBeyondTheBoundWaitTheirTurn(onLoops: Bool) async throws {
        let server = try await Self.server()
        let keys = server.keys
        let (fd, port) = try Self.silentPort()
        defer { close(fd) }
        let engine = try HTTPEngine(maxActive: 2, plainHTTPOnLoops: onLoops)
        let silent = HTTPRequest(url: "http://127.0.0.1:\(port)/", timeout: 600)
        // Two transfers to a server that never answers fill both slots.
        let stuck = (0..<2).map { _ in Task { () -> WireError.Kind? in
            do { _ = try await engine.send(silent); return nil } catch let e as WireError { return e.kind } catch { return nil }
        } }
        try await Self.until { engine.load.active == 2 }
        // A third waits; cancelled, it ends without ever being sent.
        let third = Task { () -> WireError.Kind? in
            do { _ = try await engine.send(Self.get(keys, "/rest/v1/users")); return nil } catch let e as WireError { return e.kind } catch { return nil }
        }
        try await Self.until { engine.load.waiting == 1 }
        #expect(engine.load.active == 2)
        third.cancel()
        #expect(await third.value == WireError.Kind.cancelled)
        // Freeing the slots lets the next request through.
        for t in stuck { t.cancel() }
        for t in stuck { #expect(await t.value == WireError.Kind.cancelled) }
        #expect(try await engine.send(Self.get(keys, "/rest/v1/users")).status == 200)
        engine.shutdown()
        await server.stop()
    }

    /// Waits until `condition` holds, for at most 30 s (a bound, not a timing assertion).
    static func until(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the condition never held")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test(arguments: paths) func eachDeviceKeepsItsOwnConnection(onLoops: Bool) async throws {
        let server = try await Self.server()
        let keys = server.keys
        let engine = try HTTPEngine(plainHTTPOnLoops: onLoops)
        let phoneA = try HTTPConnection(engine: engine), phoneB = try HTTPConnection(engine: engine)
        var opened: [Int] = []
        for _ in 0..<3 { opened.append(try await engine.send(Self.get(keys, "/rest/v1/users"), on: phoneA).timing.newConnections) }
        #expect(opened == [1, 0, 0], "a device reuses its keep-alive connection")
        #expect(try await engine.send(Self.get(keys, "/rest/v1/users"), on: phoneB).timing.newConnections == 1,
                "another device does not share it")
        let pooled = [try await engine.send(Self.get(keys, "/rest/v1/users")), try await engine.send(Self.get(keys, "/rest/v1/users"))]
        #expect(pooled.map(\.timing.newConnections) == [1, 0], "without a device connection, the engine's pool")
        #expect(pooled[0].timing.httpVersion == "1.1" && pooled[0].timing.bytesReceived > pooled[0].body.count)
        engine.shutdown()
        await server.stop()
    }

    @Test(arguments: paths) func bodiesGoOutAndHeadersComeBack(onLoops: Bool) async throws {
        let server = try await Self.server()
        let keys = server.keys
        let engine = try HTTPEngine(plainHTTPOnLoops: onLoops)
        let signup = HTTPRequest(method: "POST", url: keys.url + "/auth/v1/signup",
                                 headers: [("apikey", keys.anonKey), ("Content-Type", "application/json")],
                                 body: Array(#"{"email":"wire@example.com","password":"secret123"}"#.utf8))
        let session = try await engine.send(signup)
        #expect(session.status == 200)
        let object = try JSONSerialization.jsonObject(with: Data(session.body)) as? [String: Any]
        let token = try #require(object?["access_token"] as? String)
        let counted = try await engine.send(Self.get(keys, "/rest/v1/users", headers: [("Authorization", "Bearer \(token)"),
                                                                                     ("Prefer", "count=exact")]))
        #expect(counted.status == 200 && counted.header("Content-Range") == "*/0")
        let head = try await engine.send(HTTPRequest(method: "HEAD", url: keys.url + "/rest/v1/users", headers: [("apikey", keys.anonKey)]))
        #expect(head.status == 200 && head.body.isEmpty)
        let patch = try await engine.send(HTTPRequest(method: "PATCH", url: keys.url + "/rest/v1/users?id=eq.\(UUID())",
                                                      headers: [("apikey", keys.anonKey), ("Content-Type", "application/json")],
                                                      body: Array(#"{"full_name":"x"}"#.utf8)))
        #expect(patch.status == 204, "anon changes nothing, and says so as PostgREST does")
        engine.shutdown()
        await server.stop()
    }

    /// An answer past the request's `maxBodyBytes` is cut off and fails, saying so; one within it arrives whole.
    @Test(arguments: paths) func anAnswerLargerThanAllowedIsCutOff(onLoops: Bool) async throws {
        let server = try await Self.server()
        let keys = server.keys
        let engine = try HTTPEngine(plainHTTPOnLoops: onLoops)
        // A user whose name is some kilobytes, read back.
        let json = [("apikey", keys.anonKey), ("Content-Type", "application/json")]
        let session = try await engine.send(HTTPRequest(method: "POST", url: keys.url + "/auth/v1/signup", headers: json,
                                                        body: Array(#"{"email":"big@example.com","password":"secret123"}"#.utf8)))
        let object = try JSONSerialization.jsonObject(with: Data(session.body)) as? [String: Any]
        let token = try #require(object?["access_token"] as? String)
        let me = try #require((object?["user"] as? [String: Any])?["id"] as? String)
        let auth = [("Authorization", "Bearer \(token)")]
        let name = String(repeating: "n", count: 5_000)
        let insert = try await engine.send(HTTPRequest(method: "POST", url: keys.url + "/rest/v1/users", headers: json + auth,
                                                       body: Array(#"{"id":"\#(me)","public_key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","full_name":"\#(name)"}"#.utf8)))
        #expect(insert.status == 201, "\(String(decoding: insert.body, as: UTF8.self))")
        let read = Self.get(keys, "/rest/v1/users?select=full_name", headers: auth)
        let whole = try await engine.send(read)
        #expect(whole.status == 200 && whole.body.count > 5_000, "\(whole.body.count) bytes")
        var exact = read
        exact.maxBodyBytes = whole.body.count
        #expect(try await engine.send(exact).body == whole.body)
        var bounded = read
        bounded.maxBodyBytes = 1_000
        do {
            _ = try await engine.send(bounded)
            Issue.record("an answer of \(whole.body.count) bytes got through a limit of 1,000")
        } catch {
            #expect(error.kind == .transport && error.message.contains("larger than 1000 bytes"), "\(error)")
        }
        // The engine goes on serving.
        #expect(try await engine.send(read).status == 200)
        engine.shutdown()
        await server.stop()
    }

    /// A port that accepts connections (the kernel completes the handshake) and never answers.
    static func silentPort() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        #expect(bound)
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test(arguments: paths) func failuresAreTyped(onLoops: Bool) async throws {
        let engine = try HTTPEngine(plainHTTPOnLoops: onLoops)
        let (fd, port) = try Self.silentPort()
        defer { close(fd) }
        func kind(_ request: HTTPRequest) async -> WireError.Kind? {
            do {
                _ = try await engine.send(request)
                return nil
            } catch {
                return error.kind
            }
        }
        #expect(await kind(HTTPRequest(url: "http://127.0.0.1:\(port)/", timeout: 0.2)) == .timeout)
        #expect(await kind(HTTPRequest(url: "not a url")) == .invalidRequest)
        // What either path would write into the request as given is refused before it is sent.
        #expect(await kind(HTTPRequest(method: "GET / HTTP/1.1\r\nX-Smuggled:", url: "http://127.0.0.1:\(port)/")) == .invalidRequest)
        #expect(await kind(HTTPRequest(url: "http://127.0.0.1:\(port)/", headers: [("X-A", "1\r\nX-B: 2")])) == .invalidRequest)
        #expect(await kind(HTTPRequest(url: "http://127.0.0.1:\(port)/", body: [1])) == .invalidRequest)
        // A port nothing listens on: take a free one and close it.
        let (closed, closedPort) = try Self.silentPort()
        close(closed)
        #expect(await kind(HTTPRequest(url: "http://127.0.0.1:\(closedPort)/")) == .transport)

        // Cancelling the awaiting task aborts the transfer (its timeout is far away).
        let waiting = Task { await kind(HTTPRequest(url: "http://127.0.0.1:\(port)/", timeout: 600)) }
        waiting.cancel()
        #expect(await waiting.value == .cancelled)

        engine.shutdown()
        #expect(await kind(HTTPRequest(url: "http://127.0.0.1:\(port)/")) == .shutdown)
    }
}
