@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

/// `convoy serve` against clients that break HTTP or take their time
/// (docs/server.md, "Limits against hostile clients"). Raw sockets against a
/// real server; the timeouts are injected short and each effect is awaited with
/// a generous bound, so what is checked is behaviour, not timing.
@Suite struct HostileClientTests {
    /// Far longer than any injected timeout: only a connection left open reaches it.
    static let bound = 20.0

    static func server(_ configure: @escaping (inout ConnectionLimits) -> Void = { _ in }) async throws -> TestServer {
        try await TestServer { configure(&$0.limits) }
    }

    static func statusLine(_ text: String) -> String {
        text.components(separatedBy: "\r\n").first ?? ""
    }

    @Test(arguments: [
        "\u{0}\u{1}\u{2}garbage\r\n\r\n",
        "GET\r\n\r\n",
        "GET / HTTP/9.9 extra\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        "POST /auth/v1/signup HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ])
    func malformedRequestIs400AndClosed(request: String) async throws {
        let server = try await Self.server()
        let client = try RawClient(server.keys.url)
        client.send(request)
        let (text, closed) = await client.readText(within: Self.bound)
        #expect(Self.statusLine(text) == "HTTP/1.1 400 Bad Request")
        #expect(text.lowercased().contains("connection: close"))
        #expect(closed)
        await server.stop()
    }

    @Test func tooManyHeadersIs431AndClosed() async throws {
        let server = try await Self.server { $0.maxHeaderCount = 10 }
        let client = try RawClient(server.keys.url)
        client.send("GET /auth/v1/user HTTP/1.1\r\n" + (0..<20).map { "X-Flood-\($0): a\r\n" }.joined() + "\r\n")
        let (text, closed) = await client.readText(within: Self.bound)
        #expect(Self.statusLine(text) == "HTTP/1.1 431 Request Header Fields Too Large")
        #expect(closed)
        // At the limit is fine.
        let fine = try RawClient(server.keys.url)
        fine.send("GET /auth/v1/user HTTP/1.1\r\n" + (0..<9).map { "X-Flood-\($0): a\r\n" }.joined() + "Connection: close\r\n\r\n")
        let (answer, _) = await fine.readText(within: Self.bound)
        #expect(Self.statusLine(answer) == "HTTP/1.1 401 Unauthorized")
        await server.stop()
    }

    @Test func tooLongHeaderFieldIs431AndClosed() async throws {
        let server = try await Self.server { $0.maxHeaderFieldBytes = 512 }
        let client = try RawClient(server.keys.url)
        client.send("GET /auth/v1/user HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 1000))\r\n\r\n")
        let (text, closed) = await client.readText(within: Self.bound)
        #expect(Self.statusLine(text) == "HTTP/1.1 431 Request Header Fields Too Large")
        #expect(closed)
        await server.stop()
    }

    @Test func tooBigHeadIs431AndClosed() async throws {
        let server = try await Self.server { $0.maxHeaderFieldBytes = 1024; $0.maxHeaderBytes = 2048 }
        let client = try RawClient(server.keys.url)
        client.send("GET /auth/v1/user HTTP/1.1\r\n" + (0..<10).map { "X-Part-\($0): \(String(repeating: "b", count: 300))\r\n" }.joined() + "\r\n")
        let (text, closed) = await client.readText(within: Self.bound)
        #expect(Self.statusLine(text) == "HTTP/1.1 431 Request Header Fields Too Large")
        #expect(closed)
        await server.stop()
    }

    /// With the default limits a megabyte header is cut off early: the server
    /// stops reading and closes (its answer may be lost to the reset the unread rest causes).
    @Test func megabyteHeaderIsRefusedAndClosed() async throws {
        let server = try await Self.server()
        let client = try RawClient(server.keys.url)
        client.send("GET /auth/v1/user HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 1 << 20))\r\n\r\n")
        let (text, closed) = await client.readText(within: Self.bound)
        #expect(closed)
        #expect(text.isEmpty || Self.statusLine(text) == "HTTP/1.1 431 Request Header Fields Too Large", "\(text)")
        await server.stop()
    }

    @Test func halfSentHeadIs408AndClosed() async throws {
        let server = try await Self.server { $0.headerTimeout = 0.3 }
        let client = try RawClient(server.keys.url)
        client.send("GET /auth/v1/user HTTP/1.1\r\nHost: x\r\n")
        let (text, closed) = await client.readText(within: Self.bound)
        #expect(Self.statusLine(text) == "HTTP/1.1 408 Request Timeout")
        #expect(closed)
        await server.stop()
    }

    @Test func stalledBodyIs408AndClosed() async throws {
        let server = try await Self.server { $0.bodyTimeout = 0.3 }
        let client = try RawClient(server.keys.url)
        client.send("POST /auth/v1/signup HTTP/1.1\r\nHost: x\r\napikey: \(server.keys.anonKey)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"email\":")
        let (text, closed) = await client.readText(within: Self.bound)
        #expect(Self.statusLine(text) == "HTTP/1.1 408 Request Timeout")
        #expect(closed)
        await server.stop()
    }

    @Test func bodyOverTheLimitIs413AndClosed() async throws {
        let server = try await Self.server()
        let client = try RawClient(server.keys.url)
        client.send("POST /auth/v1/signup HTTP/1.1\r\nHost: x\r\napikey: \(server.keys.anonKey)\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{")
        let (text, closed) = await client.readText(within: Self.bound)
        #expect(Self.statusLine(text) == "HTTP/1.1 413 Payload Too Large")
        #expect(text.lowercased().contains("connection: close"))
        #expect(closed)
        await server.stop()
    }

    @Test func silentConnectionIsClosedWhenIdle() async throws {
        let server = try await Self.server { $0.idleTimeout = 0.3 }
        let client = try RawClient(server.keys.url)
        let (bytes, closed) = await client.read(within: Self.bound)
        #expect(closed)
        #expect(bytes.isEmpty)
        await server.stop()
    }

    @Test func keepAliveConnectionIsClosedWhenIdleAfterItsResponse() async throws {
        // Long enough that the request is read before the connection is idle even when the test process stalls
        // (a fresh-clone CI saw no answer at 0.3 s): the idle clock runs from accept until the first byte is read.
        let server = try await Self.server { $0.idleTimeout = 2 }
        let client = try RawClient(server.keys.url)
        client.send("GET /auth/v1/user HTTP/1.1\r\nHost: x\r\n\r\n")
        let (text, closed) = await client.readText(within: Self.bound)
        #expect(Self.statusLine(text) == "HTTP/1.1 401 Unauthorized")
        #expect(closed)
        await server.stop()
    }

    /// The head clock starts at a request's first byte: a keep-alive connection
    /// between requests is idle, not late, and its next request is served.
    @Test func keepAliveRequestsEachGetTheirOwnHeadClock() async throws {
        let server = try await Self.server { $0.headerTimeout = 0.5 }
        let client = try RawClient(server.keys.url)
        for _ in 0..<2 {
            client.send("GET /auth/v1/user HTTP/1.1\r\nHost: x\r\n\r\n")
            let (bytes, closed) = await client.read(within: Self.bound) { String(decoding: $0, as: UTF8.self).contains("}") }
            #expect(Self.statusLine(String(decoding: bytes, as: UTF8.self)) == "HTTP/1.1 401 Unauthorized")
            #expect(!closed)
            // Longer than the head timeout, between requests: only the idle clock runs.
            let (_, closedWhileIdle) = await client.read(within: 1.0)
            #expect(!closedWhileIdle)
        }
        await server.stop()
    }

    @Test func normalClientsAreServedWhileSlowClientsHang() async throws {
        let server = try await Self.server()
        var slow: [RawClient] = []
        for n in 0..<60 {
            let client = try RawClient(server.keys.url)
            // Silent, half a head, or half a body.
            switch n % 3 {
            case 0: break
            case 1: client.send("GET /auth/v1/user HTTP/1.1\r\nHost: x\r\n")
            default: client.send("POST /auth/v1/signup HTTP/1.1\r\napikey: \(server.keys.anonKey)\r\nContent-Length: 500\r\n\r\n{")
            }
            slow.append(client)
        }
        for _ in 0..<5 {
            _ = try await server.signUp()
        }
        // A graceful stop does not wait for them: connections with nothing owed close at once.
        await server.stop()
        withExtendedLifetime(slow) {}
    }

    // MARK: - Realtime frames (RFC 6455)

    /// The close code of the first close frame among `frames` (server frames: unmasked, short).
    static func closeCode(_ frames: [UInt8]) -> Int? {
        var i = 0
        while i + 1 < frames.count {
            let opcode = frames[i] & 0x0F, length = Int(frames[i + 1] & 0x7F)
            guard length < 126 else { return nil }
            if opcode == 0x8, length >= 2, i + 3 < frames.count { return Int(frames[i + 2]) << 8 | Int(frames[i + 3]) }
            i += 2 + length
        }
        return nil
    }

    static func upgradedClient(_ server: TestServer) async throws -> RawClient {
        let client = try RawClient(server.keys.url)
        client.send("GET /realtime/v1/websocket?apikey=\(server.keys.anonKey)&vsn=1.0.0 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let (bytes, _) = await client.read(within: bound) { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") }
        #expect(statusLine(String(decoding: bytes, as: UTF8.self)) == "HTTP/1.1 101 Switching Protocols")
        return client
    }

    @Test func unmaskedClientFrameIsClosedWith1002() async throws {
        let server = try await Self.server()
        let client = try await Self.upgradedClient(server)
        let payload = Array(#"{"topic":"phoenix","event":"heartbeat","payload":{},"ref":"1"}"#.utf8)
        client.send([0x81, UInt8(payload.count)] + payload)
        let (bytes, closed) = await client.read(within: Self.bound)
        #expect(Self.closeCode(bytes) == 1002)
        #expect(closed)
        await server.stop()
    }

    @Test func invalidUTF8TextIsClosedWith1007() async throws {
        let server = try await Self.server()
        let client = try await Self.upgradedClient(server)
        let payload: [UInt8] = [0x7B, 0xC3, 0x28, 0xFF, 0x7D]  // "{", a broken sequence, "}"
        let mask: [UInt8] = [0x11, 0x22, 0x33, 0x44]
        client.send([0x81, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $1 ^ mask[$0 % 4] })
        let (bytes, closed) = await client.read(within: Self.bound)
        #expect(Self.closeCode(bytes) == 1007)
        #expect(closed)
        await server.stop()
    }

    /// A client's text frame, masked as RFC 6455 requires (short: under 126 bytes).
    static func maskedText(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8), mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        precondition(payload.count < 126)
        return [0x81, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $1 ^ mask[$0 % 4] }
    }

    /// Supabase's Realtime (Phoenix on Cowboy) closes a socket it heard nothing
    /// from for its idle timeout with close 1000, and pings no one; a message
    /// from the client starts the clock again.
    @Test func idleRealtimeSocketIsClosedWith1000() async throws {
        let server = try await Self.server { $0.idleTimeout = 60 }
        let quiet = try await Self.upgradedClient(server)
        let talking = try await Self.upgradedClient(server)
        server.clock.advance(by: 50)
        talking.send(Self.maskedText(#"{"topic":"phoenix","event":"heartbeat","payload":{},"ref":"7"}"#))
        let (reply, _) = await talking.read(within: Self.bound) { String(decoding: $0, as: UTF8.self).contains("phx_reply") }
        #expect(String(decoding: reply, as: UTF8.self).contains(#""ref":"7""#))
        // 61 s after the upgrade: the quiet one goes, the one heard at 50 s stays.
        server.clock.advance(by: 11)
        #expect(server.server.closeIdleRealtime() == 1)
        let (bytes, closed) = await quiet.read(within: Self.bound)
        #expect(Self.closeCode(bytes) == 1000)
        #expect(closed)
        #expect(server.server.closeIdleRealtime() == 0, "a socket being closed is not closed again")
        // 61 s after its heartbeat, the other goes too.
        server.clock.advance(by: 50)
        #expect(server.server.closeIdleRealtime() == 1)
        let (last, lastClosed) = await talking.read(within: Self.bound)
        #expect(Self.closeCode(last) == 1000)
        #expect(lastClosed)
        await server.stop()
    }
}
