import ConvoyTime
import Logging

/// `convoy serve` running inside another program (`target: embedded`, tests):
/// started on the configured port (0: a free one), with its keys.
public struct EmbeddedServer: Sendable {
    public let keys: ServerKeys
    /// The app's server: a `ReferenceServer` for the Supabase apps, the app's own otherwise (QuickPic).
    public let backend: any BackendServer
    private let task: Task<Void, any Error>

    /// The Supabase-compatible server, when the app is a Supabase app.
    public var server: ReferenceServer! { backend as? ReferenceServer }

    /// Starts serving and returns once the port is bound.
    public static func start(_ configuration: ServerConfiguration = .testing, clock: any ConvoyClock = SystemClock(),
                             logger: Logger = Logger(label: "convoy.serve")) async throws -> EmbeddedServer {
        let server = try await BackendServers.make(configuration, clock: clock, logger: logger)
        let (stream, continuation) = AsyncStream<ServerKeys>.makeStream()
        let task = Task { try await server.run(gracefulShutdownSignals: []) { keys in continuation.yield(keys) } }
        var ready = stream.makeAsyncIterator()
        guard let keys = await ready.next() else {
            task.cancel()
            throw CancellationError()
        }
        return EmbeddedServer(keys: keys, backend: server, task: task)
    }

    /// Stops it and waits until it has.
    public func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}
