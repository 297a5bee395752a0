import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// `convoy serve`'s guard for another Hummingbird application on an open port (the live dashboard, `--dashboard
/// :PORT`, which has no login): each connection held to `ConnectionLimits` (head size and field count: 431; head, body
/// and idle clocks: 408 or closed), a WebSocket upgrade answered as any unknown request, and accepting paused while the
/// process is out of file descriptors (`AcceptPause`).
public enum GuardedServer {
    /// The HTTP server to give `Application(router:server:…)`.
    public static func http(limits: ConnectionLimits = ConnectionLimits()) -> HTTPServerBuilder {
        ReferenceServer.httpServer(webSocketRouter: Router(context: RealtimeRequestContext.self), limits: limits)
    }

    /// Call from `onServerRunning` with its listening channel.
    public static func pauseAcceptingWhenOutOfDescriptors(_ listener: any Channel, logger: Logger) async {
        await AcceptPause.install(on: listener, logger: logger)
    }
}
