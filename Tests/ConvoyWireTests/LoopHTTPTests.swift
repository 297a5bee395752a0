import ConvoyServer
@testable import ConvoyWire
import Foundation
import NIOHTTP1
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Plain HTTP on NIO's loops (`LoopHTTP`): what it sends, which URLs it takes,
/// and its connections' lives (the paths it shares with libcurl are in `HTTPEngineTests`).
@Suite struct LoopHTTPTests {
    @Test(arguments: [
        ("http://127.0.0.1:54321/rest/v1/users?select=id", "127.0.0.1", 54321, "/rest/v1/users?select=id", "127.0.0.1:54321"),
        ("http://example.com", "example.com", 80, "/", "example.com"),
        ("http://example.com?x=1", "example.com", 80, "/?x=1", "example.com"),
        ("http://[::1]:8080/a", "::1", 8080, "/a", "[::1]:8080"),
    ])
    func plainURLsAreTaken(url: String, host: String, port: Int, uri: String, hostHeader: String) throws {
        let t = try #require(PlainHTTPTarget(url))
        #expect(t.origin == LoopHTTP.Origin(host: host, port: port) && t.uri == uri && t.hostHeader == hostHeader)
    }

    /// What NIO's codec would not carry as libcurl does goes to libcurl.
    @Test(arguments: ["https://example.com/", "http://user:pw@example.com/", "http://example.com/#top", "http://example.com:0/",
                      "http://example.com:x/", "http:///path", "http://exa mple.com/", "not a url", "http://[::1/"])
    func otherURLsGoToLibcurl(url: String) {
        #expect(PlainHTTPTarget(url) == nil)
    }

    @Test func theHeadKeepsTheRequestsHeadersInOrder() throws {
        let target = try #require(PlainHTTPTarget("http://127.0.0.1:9/rest/v1/locations"))
        let post = LoopHTTP.head(HTTPRequest(method: "POST", url: "", headers: [("apikey", "k"), ("Prefer", "return=minimal"), ("apikey", "again")],
                                             body: Array("[1]".utf8)), target)
        #expect(post.method == .POST && post.uri == "/rest/v1/locations" && post.version == .http1_1)
        #expect(post.headers.map(\.name) == ["Host", "apikey", "Prefer", "apikey", "Accept", "Content-Length"])
        #expect(post.headers["Host"] == ["127.0.0.1:9"] && post.headers["Content-Length"] == ["3"])
        let emptyPost = LoopHTTP.head(HTTPRequest(method: "POST", url: ""), target)
        #expect(emptyPost.headers["Content-Length"] == ["0"], "an empty POST says so, as libcurl's does")
        let get = LoopHTTP.head(HTTPRequest(url: "", headers: [("Accept", "application/json")]), target)
        #expect(get.headers["Content-Length"].isEmpty && get.headers["Accept"] == ["application/json"])
    }

    /// A response that closes its connection leaves the pool; the next request opens another.
    @Test func aClosedConnectionIsNotReused() async throws {
        let server = try await HTTPEngineTests.server()
        let keys = server.keys
        let engine = try HTTPEngine()
        let phone = try HTTPConnection(engine: engine)
        var opened: [Int] = []
        opened.append(try await engine.send(HTTPEngineTests.get(keys, "/rest/v1/users", headers: [("Connection", "close")]), on: phone).timing.newConnections)
        opened.append(try await engine.send(HTTPEngineTests.get(keys, "/rest/v1/users"), on: phone).timing.newConnections)
        opened.append(try await engine.send(HTTPEngineTests.get(keys, "/rest/v1/users"), on: phone).timing.newConnections)
        #expect(opened == [1, 1, 0])
        engine.shutdown()
        await server.stop()
    }

    /// The shared pool's bound: at most one connection, every request served on it in turn.
    @Test func theSharedPoolKeepsItsBound() async throws {
        let server = try await HTTPEngineTests.server()
        let keys = server.keys
        let engine = try HTTPEngine(maxConnections: 1)
        let responses = try await withThrowingTaskGroup(of: HTTPResponse.self) { group in
            for _ in 0..<40 { group.addTask { try await engine.send(HTTPEngineTests.get(keys, "/rest/v1/users")) } }
            return try await group.reduce(into: [HTTPResponse]()) { $0.append($1) }
        }
        #expect(responses.allSatisfy { $0.status == 200 })
        #expect(responses.map(\.timing.newConnections).reduce(0, +) == 1)
        #expect(engine.load.active == 0 && engine.load.waiting == 0)
        engine.shutdown()
        await server.stop()
    }

    /// A server that closes a keep-alive connection as the next request arrives on it (its idle
    /// timeout, racing the client): the request, of which nothing was answered, is sent again on a new one.
    @Test func aRequestDroppedOnAReusedConnectionIsSentAgain() async throws {
        let server = try DroppingServer()
        defer { server.stop() }
        let engine = try HTTPEngine()
        let url = "http://127.0.0.1:\(server.port)/"
        // Generous timeouts: what is asserted is the resend, not its speed (a fresh-clone CI's busiest minute
        // stalled the first request past the default 30 s).
        let first = try await engine.send(HTTPRequest(url: url, timeout: 300))
        #expect(first.status == 200 && String(decoding: first.body, as: UTF8.self) == "ok" && first.timing.newConnections == 1)
        let second = try await engine.send(HTTPRequest(method: "POST", url: url, body: Array("{}".utf8), timeout: 300))
        #expect(second.status == 200 && second.timing.newConnections == 1)
        engine.shutdown()
    }
}

/// Its first connection answers one request with a keep-alive 200, then closes when the next
/// request arrives, unanswered; its second answers one request and closes.
private final class DroppingServer: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let thread: Thread

    init() throws {
        let (fd, port) = try HTTPEngineTests.silentPort()
        self.fd = fd
        self.port = port
        thread = Thread {
            let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok".utf8)
            func readHead(_ c: Int32) -> Bool {
                var request: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: request, as: UTF8.self).contains("\r\n\r\n") {
                    let n = read(c, &buffer, buffer.count)
                    guard n > 0 else { return false }
                    request += buffer[0..<n]
                }
                return true
            }
            let first = accept(fd, nil, nil)
            guard first >= 0 else { return }
            if readHead(first) { _ = reply.withUnsafeBytes { write(first, $0.baseAddress, $0.count) } }
            _ = readHead(first)
            close(first)
            let second = accept(fd, nil, nil)
            guard second >= 0 else { return }
            if readHead(second) { _ = reply.withUnsafeBytes { write(second, $0.baseAddress, $0.count) } }
            close(second)
        }
        thread.start()
    }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
}
