import ConvoySodium
import ConvoyWire
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// What QuickPic's handlers are told by the configuration.
struct QuickPicSettings: Sendable {
    var passwordHash: PasswordHash
    /// The largest body outside `POST /messages`, bytes.
    var bodyLimit: Int
    /// The rules undone on purpose (`--weaken`).
    var weaknesses: Set<QuickPicWeakness> = []

    func weak(_ w: QuickPicWeakness) -> Bool { weaknesses.contains(w) }
}

/// `convoy serve --app quickpic`: QuickPic's own server (quickpic-spec.md; its JSON as docs/quickpic-api.md
/// has it) — not a Supabase app, so none of the platform's auth, PostgREST or Realtime: registration and
/// login with Argon2id passwords, 15-minute access JWTs and rotating 7-day refresh tokens, friends by
/// username, messages stored as opaque signed blobs, deleted on their recipient's ACK and purged after 7
/// days if never fetched. Over an embedded SQLite file or PostgreSQL, as the other apps. It imports no
/// ConvoyCrypto: it verifies who signed a blob and opens nothing.
public final class QuickPicServer: BackendServer {
    public static let appName = "quickpic"
    /// The spec's fallback purge: undelivered messages go after 7 days…
    public static let defaultRetention: Double = 7 * 86_400
    /// …by a cron job, hourly unless told.
    public static let defaultPurgeEvery: Double = 3_600
    /// The spec's "short-lived JWT (15min)".
    public static let defaultTokenTTL: Double = 15 * 60

    public let configuration: ServerConfiguration
    let store: any QuickPicStore
    let postgres: QuickPicPostgresStore?
    let routes: QuickPicRoutes
    let clock: any ConvoyClock
    let logger: Logger
    /// Removed at shutdown when the server made it.
    let temporaryDirectory: URL?

    public var hasAPIKeys: Bool { false }

    public init(configuration: ServerConfiguration, clock: any ConvoyClock = SystemClock(),
                logger: Logger = Logger(label: "convoy.serve")) async throws {
        try configuration.validate()
        (self.configuration, self.clock, self.logger) = (configuration, clock, logger)
        let secret: String
        if let url = configuration.postgresURL {
            let (pg, kept) = try await QuickPicPostgresStore.open(url: url, pool: configuration.postgresConnections, given: configuration.jwtSecret,
                                                                  fresh: ServerKeys.randomSecret(), logger: logger)
            (store, postgres, secret, temporaryDirectory) = (pg, pg, kept, nil)
        } else {
            var path = configuration.databasePath
            var made: URL?
            if path == nil {
                let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-serve-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                made = dir
                path = dir.appendingPathComponent("quickpic.sqlite").path
            }
            let sqlite = try QuickPicSQLiteStore(path: path!)
            let kept = try await sqlite.secret(orStore: ServerKeys.randomSecret())
            (store, postgres, secret, temporaryDirectory) = (sqlite, nil, configuration.jwtSecret ?? kept, made)
        }
        let settings = QuickPicSettings(passwordHash: configuration.passwordHash, bodyLimit: configuration.bodyLimit,
                                        weaknesses: configuration.quickPicWeaknesses)
        if !settings.weaknesses.isEmpty {
            logger.warning("quickpic: weakened on purpose: \(settings.weaknesses.map(\.rawValue).sorted().joined(separator: ", "))")
        }
        routes = QuickPicRoutes(store: store, tokens: await QuickPicTokens(secret: secret, clock: clock, ttl: configuration.tokenTTL),
                                limiter: LoginLimiter(limit: configuration.loginLimit, window: configuration.loginWindow, clock: clock),
                                clock: clock, settings: settings,
                                dummyHash: try configuration.passwordHash.hash(ServerKeys.randomSecret()))
    }

    deinit {
        if let dir = temporaryDirectory { try? FileManager.default.removeItem(at: dir) }
    }

    /// The fallback purge now: messages stored more than `--retention` ago go, delivered or not (and refresh
    /// tokens past their expiry). Returns how many messages went.
    @discardableResult
    public func purgeOnce() async throws -> Int {
        let now = clock.date
        let gone = try await store.purgeMessages(before: now.addingTimeInterval(-configuration.retention))
        _ = try await store.purgeRefreshTokens(before: now)
        if gone > 0 { logger.info("quickpic purge: \(gone) message(s) older than \(Int(configuration.retention)) s deleted") }
        return gone
    }

    public func run(gracefulShutdownSignals signals: [UnixSignal] = [],
                    onReady: @escaping @Sendable (ServerKeys) async -> Void = { _ in }) async throws {
        let router = Router(context: QuickPicContext.self)
        routes.add(to: router)
        let (host, logger) = (configuration.host, logger)
        // No websocket route: an upgrade is refused like any unknown path.
        let app = Application(
            router: router,
            server: ReferenceServer.httpServer(webSocketRouter: Router(context: BasicWebSocketRequestContext.self), limits: configuration.limits),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "quickpic"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                await onReady(ServerKeys(url: "http://\(host):\(port)", anonKey: "", serviceRoleKey: ""))
            },
            logger: logger)
        defer {
            if let dir = temporaryDirectory { try? FileManager.default.removeItem(at: dir) }
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let postgres { services.append(.init(service: postgres.client)) }
        if configuration.purgeEvery > 0 { services.append(.init(service: QuickPicPurge(server: self))) }
        services.append(.init(service: app, successTerminationBehavior: .gracefullyShutdownGroup))
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: signals, logger: logger))
        try await CannotListen.naming(configuration) { try await group.run() }
    }
}

/// The fallback purge's cron: `purgeOnce` every `--purge-every`, on the server's clock; a failed round is
/// logged and the next one comes as usual.
struct QuickPicPurge: Service {
    let server: QuickPicServer

    func run() async throws {
        let every = server.configuration.purgeEvery
        await cancelWhenGracefulShutdown {
            var next = server.clock.now() + every
            while !Task.isCancelled {
                do { try await server.clock.sleep(until: next) } catch { return }
                next += every
                do { try await server.purgeOnce() } catch {
                    server.logger.error("quickpic purge failed: \(String(describing: error).prefix(200))")
                }
            }
        }
    }
}
