import ConvoyServer
import ConvoyWire
import Logging

/// An embedded `convoy serve` and an HTTP engine for one test: `body` gets both,
/// and both are stopped after it, whether it returned or threw.
func withEmbeddedBackend(_ configuration: ServerConfiguration = .testing,
                         _ body: (EmbeddedServer, HTTPEngine) async throws -> Void) async throws {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    let embedded = try await EmbeddedServer.start(configuration, logger: logger)
    let engine: HTTPEngine
    do {
        engine = try HTTPEngine()
    } catch {
        await embedded.stop()
        throw error
    }
    do {
        try await body(embedded, engine)
    } catch {
        engine.shutdown()
        await embedded.stop()
        throw error
    }
    engine.shutdown()
    await embedded.stop()
}

extension Logger {
    /// A logger that says only what is critical (tests).
    static var quiet: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }
}
