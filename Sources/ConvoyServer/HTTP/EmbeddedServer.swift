import Logging

/// `convoy serve` running inside another program (`target: embedded`, tests):
/// started on the configured port (0: a free one), with its keys.
public struct EmbeddedServer: Sendable {
    public let keys: ServerKeys
    public let server: ReferenceServer
    private let task: Task<Void, any Error>

    /// Starts serving and returns once the port is bound.
    public static func start(_ configuration: ServerConfiguration = .testing,
                             logger: Logger = Logger(label: "convoy.serve")) async throws -> EmbeddedServer {
        let server = try await ReferenceServer(configuration: configuration, logger: logger)
        let (stream, continuation) = AsyncStream<ServerKeys>.makeStream()
        let task = Task { try await server.run { keys in continuation.yield(keys) } }
        var ready = stream.makeAsyncIterator()
        guard let keys = await ready.next() else {
            task.cancel()
            throw CancellationError()
        }
        return EmbeddedServer(keys: keys, server: server, task: task)
    }

    /// Stops it and waits until it has.
    public func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}
