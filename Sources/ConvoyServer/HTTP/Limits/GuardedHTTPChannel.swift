import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore

/// Hummingbird's HTTP/1 channel with WebSocket upgrade, each connection held to
/// `ConnectionLimits` (`RequestLimitsHandler`). Hummingbird's own idle timeout
/// only starts after a connection's first request head, so a client that sends
/// half a head, or nothing, would be kept for ever; the guard is there from accept.
struct GuardedHTTPChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    let base: HTTP1WebSocketUpgradeChannel
    let limits: ConnectionLimits

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let guardHandler = RequestLimitsHandler(limits: limits)
            // After the upgrade handler, which holds parts back until it knows the
            // request is no upgrade; errors from the decoder pass it on their way here.
            try channel.pipeline.syncOperations.addHandler(guardHandler)
            try channel.pipeline.syncOperations.addHandler(ByteArrivalHandler(guardHandler), position: .first)
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
