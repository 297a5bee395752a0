import ConvoyServer
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization
import Testing

@testable import ConvoyWire

/// The Realtime client's own websocket (`RealtimeSocket`) against a bare NIO websocket server that does what
/// a server may: split a message into fragments, ping, close; and against `convoy serve` refusing the upgrade.
@Suite struct RealtimeSocketTests {
    /// What the client sent the test server.
    final class Heard: Sendable {
        let frames = Mutex<[WebSocketFrame]>([])
        /// Yields once the client's close frame has been read.
        let (closed, sawClose) = AsyncStream<Void>.makeStream()
    }

    /// What the test server does once a client is upgraded: it sends `script`'s frames, then records what the client sends.
    final class Peer: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame
        let script: [WebSocketFrame]
        let heard: Heard

        init(script: [WebSocketFrame], heard: Heard) {
            self.script = script
            self.heard = heard
        }

        func handlerAdded(context: ChannelHandlerContext) {
            for frame in script { context.write(wrapOutboundOut(frame), promise: nil) }
            context.flush()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            heard.frames.withLock { $0.append(frame) }
            if frame.opcode == .connectionClose {
                heard.sawClose.yield()
                context.close(promise: nil)
            }
        }
    }

    static func text(_ s: String, fin: Bool = true, opcode: WebSocketOpcode = .text) -> WebSocketFrame {
        var b = ByteBuffer()
        b.writeString(s)
        return WebSocketFrame(fin: fin, opcode: opcode, data: b)
    }

    /// A websocket server on loopback whose upgraded connections run `Peer(script)`; returns its port.
    static func server(_ script: [WebSocketFrame], heard: Heard) async throws -> (any Channel, Int) {
        let upgrader = NIOWebSocketServerUpgrader(shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
                                                  upgradePipelineHandler: { channel, _ in
                                                      channel.eventLoop.makeCompletedFuture {
                                                          try channel.pipeline.syncOperations.addHandler(Peer(script: script, heard: heard))
                                                      }
                                                  })
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return (channel, channel.localAddress!.port!)
    }

    @Test func fragmentsPingsAndTheCloseHandshake() async throws {
        let change = #"{"topic":"realtime:a","event":"postgres_changes","ref":null,"payload":{"data":{"type":"INSERT","table":"t","commit_timestamp":"2026-11-27T10:00:00Z","record":{"id":1}}}}"#
        let half = change.index(change.startIndex, offsetBy: 40)
        var ping = ByteBuffer()
        ping.writeString("are you there")
        var close = ByteBuffer()
        close.write(webSocketErrorCode: .goingAway)
        let heard = Heard()
        let (server, port) = try await Self.server([
            Self.text(String(change[..<half]), fin: false),
            WebSocketFrame(fin: true, opcode: .ping, data: ping),
            Self.text(String(change[half...]), opcode: .continuation),
            WebSocketFrame(fin: true, opcode: .connectionClose, data: close),
        ], heard: heard)
        defer { server.close(promise: nil) }

        let realtime = RealtimeClient(url: "ws://127.0.0.1:\(port)/realtime/v1/websocket?vsn=1.0.0", accessToken: "t",
                                      backoffWait: { _ in try await Task.sleep(for: .seconds(3600)) })
        let running = Task { await realtime.run() }
        defer { running.cancel() }
        var events = realtime.events.makeAsyncIterator()
        #expect(try await SupabaseClientsTests.next(&events) { if case .connected(let a) = $0 { a } else { nil } } == 0)
        // The fragments are one message, read as one change, though a ping came between them.
        let got = try await SupabaseClientsTests.next(&events) { if case .change(_, let c) = $0 { c } else { nil } }
        #expect(got.table == "t" && got.record["id"] == "1")
        _ = try await SupabaseClientsTests.next(&events) { if case .disconnected(let r) = $0 { r } else { nil } }
        // The ping was answered with its data, the close with its code; both masked, as a client's frames must be.
        for await _ in heard.closed { break }
        let frames = heard.frames.withLock { $0 }
        let pong = try #require(frames.first { $0.opcode == .pong })
        #expect(pong.maskKey != nil && String(buffer: pong.unmaskedData) == "are you there")
        let closeReply = try #require(frames.first { $0.opcode == .connectionClose })
        var code = closeReply.unmaskedData
        #expect(closeReply.maskKey != nil && code.readWebSocketErrorCode() == .goingAway)
    }

    @Test func aRefusedUpgradeSaysWhatTheServerAnswered() async throws {
        let server = try await HTTPEngineTests.server()
        let realtime = RealtimeClient(url: server.keys.url.replacingOccurrences(of: "http://", with: "ws://")
                                          + "/realtime/v1/websocket?apikey=not-a-key&vsn=1.0.0", accessToken: "t",
                                      backoffWait: { _ in try await Task.sleep(for: .seconds(3600)) })
        let running = Task { await realtime.run() }
        var events = realtime.events.makeAsyncIterator()
        let reason: Result<String, any Error>
        do {
            reason = .success(try await SupabaseClientsTests.next(&events) { if case .disconnected(let r) = $0 { r } else { nil } })
        } catch {
            reason = .failure(error)
        }
        running.cancel()
        // Stopped whatever happened: a server left running keeps its temporary database until the process ends.
        await server.stop()
        let text = try reason.get()
        #expect(text.contains("answered the websocket upgrade with HTTP 4"), "\(text)")
    }

    @Test func aURLThatIsNotAWebsocketsIsRefused() async throws {
        let attempt = RealtimeSocket.open(url: "ftp://example.com/x", proxy: nil, maxFrameSize: 1024) { _ in }
        await #expect(throws: (any Error).self) { try await attempt.future.get() }
    }
}
