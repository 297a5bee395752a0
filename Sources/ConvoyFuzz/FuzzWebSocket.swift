import ConvoyServer
import ConvoyWire
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization

/// Websocket frames at both ends, through the handlers each end runs behind NIO's frame decoder: `convoy serve`'s
/// Realtime connections (`MaskedFrameGuard`) and the Realtime client's (`RealtimeClient.frameHandlers`).
enum FuzzWebSocket {
    static let target = FuzzTarget(
        name: "websocket",
        summary: "websocket frames; server end: the app sees only masked frames up to the first unmasked one, which is "
            + "answered with a close (1002); client end: no text longer than its largest message, every close answered"
    ) { bytes in
        var inv = Invariants()
        server(bytes.array, &inv)
        client(bytes.array, &inv)
        return inv
    }

    private static func server(_ input: [UInt8], _ inv: inout Invariants) {
        let channel = EmbeddedChannel()
        let decoded = Tap(), app = Tap()
        let sync = channel.pipeline.syncOperations
        try? sync.addHandlers([ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: MaskedFrameGuard.maxFrameSize)),
                               WebSocketProtocolErrorHandler(), decoded, MaskedFrameGuard(), app])
        _ = try? channel.writeInbound(ByteBuffer(bytes: input))
        let seen = decoded.frames.withLock { $0 }, passed = app.frames.withLock { $0 }
        let masked = Array(seen.prefix { $0.maskKey != nil })
        inv.accepted = !passed.isEmpty
        inv.expect(passed.map(\.data) == masked.map(\.data) && passed.count == masked.count,
                   "server: the app saw \(passed.count) frame(s) of \(seen.count) decoded, \(masked.count) before the first unmasked one")
        inv.expect(seen.allSatisfy { $0.length <= MaskedFrameGuard.maxFrameSize }, "server: a frame over the largest message")
        if masked.count < seen.count {
            let closes = outbound(channel).filter { $0.opcode == .connectionClose }
            var code = closes.first?.data
            inv.expect(code?.readWebSocketErrorCode() == .protocolError, "server: an unmasked frame not answered with close 1002")
        }
        done(channel)
    }

    private static func client(_ input: [UInt8], _ inv: inout Invariants) {
        let channel = EmbeddedChannel()
        let texts = Mutex<[String]>([])
        let decoded = Tap()
        let sync = channel.pipeline.syncOperations
        try? sync.addHandlers([ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: RealtimeClient.maxFrameSize)),
                               WebSocketProtocolErrorHandler(), decoded])
        try? sync.addHandlers(RealtimeClient.frameHandlers { text in texts.withLock { $0.append(text) } })
        _ = try? channel.writeInbound(ByteBuffer(bytes: input))
        let read = texts.withLock { $0 }
        inv.expect(read.allSatisfy { $0.utf8.count <= RealtimeClient.maxFrameSize }, "client: a text over the largest message")
        let seen = decoded.frames.withLock { $0 }
        if seen.contains(where: { $0.opcode == .connectionClose }) {
            inv.expect(outbound(channel).contains { $0.opcode == .connectionClose && $0.maskKey != nil },
                       "client: the server's close not answered with a masked close")
        }
        done(channel)
    }

    /// Closes the channel and its loop: a close the pipeline already had still leaves the loop holding tasks that
    /// hold the channel (LeakSanitizer finds the cycle).
    private static func done(_ channel: EmbeddedChannel) {
        _ = try? channel.finish()
        try? channel.embeddedEventLoop.syncShutdownGracefully()
    }

    private static func outbound(_ channel: EmbeddedChannel) -> [WebSocketFrame] {
        var out: [WebSocketFrame] = []
        while let frame = try? channel.readOutbound(as: WebSocketFrame.self) { out.append(frame) }
        return out
    }

    /// Keeps every frame that passes it, then passes it on.
    private final class Tap: ChannelInboundHandler, Sendable {
        typealias InboundIn = WebSocketFrame
        typealias InboundOut = WebSocketFrame
        let frames = Mutex<[WebSocketFrame]>([])

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            frames.withLock { $0.append(frame) }
            context.fireChannelRead(data)
        }
    }
}
