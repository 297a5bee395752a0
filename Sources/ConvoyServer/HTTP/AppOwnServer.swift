import ConvoyTime
import Hummingbird
import HummingbirdWebSocket
import Logging
import ServiceLifecycle
import UnixSignals

/// What an app's own server (QuickPic's, Closer's: not Supabase apps) runs besides its routes: one HTTP
/// application held to the connection limits and paused when out of file descriptors (`AcceptPause`), the app's
/// websocket routes if it has any (Closer's Listen; an upgrade to any other path is refused), its keys empty, and its background services, in one `ServiceGroup` that a signal stops gracefully.
enum AppOwnServer {
    static func run(_ router: Router<ClientRequestContext>, webSocketRouter: Router<RealtimeRequestContext> = Router(context: RealtimeRequestContext.self),
                    name: String, configuration: ServerConfiguration,
                    services background: [any Service], signals: [UnixSignal], logger: Logger,
                    onReady: @escaping @Sendable (ServerKeys) async -> Void) async throws {
        let host = configuration.host
        let app = Application(
            router: router,
            server: ReferenceServer.httpServer(webSocketRouter: webSocketRouter, limits: configuration.limits),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: name),
            onServerRunning: { channel in
                await AcceptPause.install(on: channel, logger: logger)
                let port = channel.localAddress?.port ?? 0
                await onReady(ServerKeys(url: "http://\(host):\(port)", anonKey: "", serviceRoleKey: ""))
            },
            logger: logger)
        var services = background.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }
        services.append(.init(service: app, successTerminationBehavior: .gracefullyShutdownGroup))
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: signals, logger: logger))
        try await CannotListen.naming(configuration) { try await group.run() }
    }
}

/// A purge every `every` seconds on an app server's clock, until a graceful shutdown; a failed round is
/// logged and the next one comes as usual.
struct PeriodicPurge: Service {
    let every: Double
    let clock: any ConvoyClock
    let logger: Logger
    let label: String
    let purge: @Sendable () async throws -> Void

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var next = clock.now() + every
            while !Task.isCancelled {
                do { try await clock.sleep(until: next) } catch { return }
                next += every
                do { try await purge() } catch {
                    logger.error("\(label) purge failed: \(String(describing: error).prefix(200))")
                }
            }
        }
    }
}
