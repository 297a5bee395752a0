import ConvoyWire
import Foundation
import Testing
@testable import ConvoyServer

/// What every server kind owes a client that pipelines or uploads before it reads (docs/server.md, "Limits
/// against hostile clients"): every response in order, then the refusal, then the close (RFC 9112 §9.3.2), and
/// a refusal the client can read after writing its whole body (§9.6, lingering close). Raw sockets against the
/// Supabase-compatible server (Green Box, Survale) and the apps' own (QuickPic, Closer).
@Suite struct HTTPOrderTests {
    static let apps = ["greenbox", "survale", "quickpic", "closer"]
    static let bound = 20.0

    static func server(_ app: String) async throws -> EmbeddedServer {
        var configuration = ServerConfiguration.testing
        configuration.app = app
        return try await EmbeddedServer.start(configuration)
    }

    /// The status codes in what a server sent, in order.
    static func statuses(_ bytes: [UInt8]) -> [Int] {
        let text = String(decoding: bytes, as: UTF8.self)
        var out: [Int] = []
        var rest = text[...]
        while let r = rest.range(of: "HTTP/1.1 ") {
            out.append(Int(rest[r.upperBound...].prefix(3)) ?? -1)
            rest = rest[r.upperBound...]
        }
        return out
    }

    /// `text` sent in one write to `app`'s server: the statuses it answered, in order, and whether it closed.
    static func exchange(_ app: String, _ text: String) async throws -> (statuses: [Int], closed: Bool, text: String) {
        let server = try await Self.server(app)
        let client = try RawClient(server.keys.url)
        client.send(text)
        let (bytes, closed) = await client.read(within: Self.bound)
        await server.stop()
        return (Self.statuses(bytes), closed, String(decoding: bytes.prefix(600), as: UTF8.self))
    }

    /// One write: three complete requests, then bytes that do not parse. Each request gets its answer, in
    /// order, then the garbage its 400, then the connection closes (before: a bare close, nothing answered).
    @Test(arguments: apps)
    func pipelinedRequestsThenGarbageGetEveryAnswerThenA400(app: String) async throws {
        let good = (1...3).map { "GET /nothing/\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined()
        let (statuses, closed, text) = try await Self.exchange(app, good + "garbage \u{1}\r\n\r\n")
        #expect(statuses.count == 4 && statuses.last == 400 && statuses.dropLast().allSatisfy { $0 != 400 && $0 >= 200 }, "\(statuses): \(text)")
        #expect(closed)
    }

    /// A body longer than its Content-Length: the request is answered, then the extra bytes (a request that
    /// does not parse) get a 400.
    @Test(arguments: apps)
    func aBodyLongerThanItsLengthIsAnsweredThenTheRestRefused(app: String) async throws {
        let (statuses, closed, text) = try await Self.exchange(
            app, "POST /nothing HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}{\"more\":\"than it said\"}")
        #expect(statuses.count == 2 && statuses.last == 400 && statuses.first != 400, "\(statuses): \(text)")
        #expect(closed)
    }

    /// A client that writes its whole 8 MB upload before it reads (Python's urllib, many SDKs) with
    /// `Connection: close`, to a route that refuses it before reading the body: the upload is drained, not
    /// cut off (a broken pipe), and the client reads the refusal.
    @Test(arguments: apps)
    func aRefusedUploadIsReadableByAClientThatWritesFirst(app: String) async throws {
        let server = try await Self.server(app)
        let client = try RawClient(server.keys.url)
        let size = 8_000_000
        let path = app == "quickpic" ? "/messages" : app == "closer" ? "/acceptInviteCallable" : "/rest/v1/nothing"
        let head = "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: \(size)\r\n\r\n"
        let sent = await client.sendWaiting(Array(head.utf8) + [UInt8](repeating: 0x20, count: size))
        #expect(sent, "the server stopped reading the upload (or reset the connection) before the client was done")
        let (bytes, closed) = await client.read(within: Self.bound)
        let statuses = Self.statuses(bytes)
        #expect(statuses.count == 1 && (400..<500).contains(statuses.first ?? 0), "\(statuses): \(String(decoding: bytes.prefix(300), as: UTF8.self))")
        #expect(closed)
        await server.stop()
    }
}
