import NIOCore
import NIOWebSocket

/// RFC 6455 §5.1: a server closes the connection on an unmasked client frame,
/// with 1002 (protocol error). NIO's frame decoder accepts both, so this sits
/// behind it on every Realtime connection. (Invalid UTF-8 in text frames is
/// swift-websocket's: `validateUTF8`, closed with 1007.)
package final class MaskedFrameGuard: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = WebSocketFrame
    package typealias InboundOut = WebSocketFrame
    package typealias OutboundOut = WebSocketFrame

    /// The largest Realtime message `convoy serve` reads, for the frame decoder in front of this guard.
    package static let maxFrameSize = RealtimeRoutes.maxMessage

    private var closing = false

    package init() {}

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        guard unwrapInboundIn(data).maskKey != nil else {
            closing = true
            var reason = context.channel.allocator.buffer(capacity: 2)
            reason.write(webSocketErrorCode: .protocolError)
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)
            context.writeAndFlush(wrapOutboundOut(close)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            return
        }
        context.fireChannelRead(data)
    }
}

@available(*, unavailable)
extension MaskedFrameGuard: Sendable {}
