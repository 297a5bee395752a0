import ConvoySodium
import ConvoyTime
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import UnixSignals

/// `convoy serve`: a Supabase-compatible backend for an app (`--app`, Green Box
/// by default) — GoTrue's auth at `/auth/v1`, PostgREST at `/rest/v1` with the
/// app's row-level security, its RPCs, Realtime, Storage at `/storage/v1`, and
/// the app's retention purge — over an embedded SQLite store or a PostgreSQL database.
/// It stores and forwards opaque blobs and never holds a private key.
public final class ReferenceServer: Sendable {
    public let configuration: ServerConfiguration
    /// The app served (`configuration.app`).
    let app: any ServerApp
    let clock: any ConvoyClock
    let logger: Logger
    let auth: any AuthStore
    let tables: any TableStore
    let hub: RealtimeHub
    /// The one way committed row changes reach the hub, from either store.
    let feed: ChangeFeed
    /// Who may do what on private Realtime channels: the store's policies on `realtime.messages`.
    let channels: any ChannelAuthorizer
    /// The PostgreSQL store, when `--database` is a postgres:// URL.
    let postgres: PostgresStore?
    let tokens: TokenService
    let purger: RetentionPurger
    /// The app's periodic work (Survale: auto-end).
    let housekeeper: Housekeeper
    /// Closes Realtime sockets idle for the idle timeout.
    let idleSweep: RealtimeIdleSweep
    /// Storage's buckets and objects (`/storage/v1`).
    let objects: ObjectStorage
    let anonKey: String
    let serviceRoleKey: String
    /// `configuration.rateLimits`, with the migrations folder's `rate-limits.yaml` on top.
    let rateLimiter: RateLimiter
    /// Removed at shutdown when the server made it.
    let temporaryDirectory: URL?

    /// Opens (or creates) the database and makes the API keys. With a
    /// PostgreSQL URL this connects, applies the migrations and reads the schema.
    public convenience init(configuration: ServerConfiguration, clock: any ConvoyClock = SystemClock(),
                            logger: Logger = Logger(label: "convoy.serve")) async throws {
        try await self.init(configuration: configuration, serving: nil, clock: clock, logger: logger)
    }

    /// As the public initialiser; `serving` replaces the configured app (tests
    /// serve apps of their own, e.g. with a Storage policy).
    init(configuration: ServerConfiguration, serving: (any ServerApp)?, clock: any ConvoyClock,
         logger: Logger) async throws {
        try configuration.validate()
        guard let app = serving ?? ServerApps.make(configuration.app) else {
            throw ServerConfiguration.Invalid(description: "--app: unknown app '\(configuration.app)'")
        }
        self.app = app
        self.configuration = configuration
        self.clock = clock
        rateLimiter = RateLimiter(try configuration.effectiveRateLimits(), clock: clock)
        self.logger = logger
        // What tokens are signed with: an explicit --jwt-secret, else the database's
        // own (made on its first start and kept in it, as a Supabase project keeps its secret).
        let secret: String
        let catalog: any ObjectCatalog, objectRoot: URL
        if let url = configuration.postgresURL {
            let pg = try await PostgresStore.open(url: url, configuration: configuration, app: app, clock: clock, logger: logger)
            secret = pg.jwtSecret
            postgres = pg
            auth = pg
            hub = RealtimeHub(schema: pg.schema, clock: clock)
            feed = ChangeFeed(hub: hub, policies: nil)
            tables = PostgresTables(store: pg, app: app)
            channels = PostgresChannelAuthorizer(store: pg)
            catalog = PostgresObjectCatalog(store: pg)
            if let dir = configuration.objectStorageDirectory {
                objectRoot = URL(fileURLWithPath: dir)
                temporaryDirectory = nil
            } else {
                // No disk of its own to keep them on: object bytes last as long as this server.
                objectRoot = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-objects-\(UUID().uuidString)")
                temporaryDirectory = objectRoot
            }
        } else {
            var path = configuration.databasePath
            if path == nil {
                let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-serve-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                temporaryDirectory = dir
                path = dir.appendingPathComponent("convoy.sqlite").path
            } else {
                temporaryDirectory = nil
            }
            let policies = app.policies(strict: configuration.strictPolicies)
            hub = RealtimeHub(schema: app.schema, clock: clock)
            feed = ChangeFeed(hub: hub, policies: policies)
            let store = try Store(path: path!, app: app, feed: feed)
            let unpreparable = try await store.unpreparable(policies, schema: app.schema)
            guard unpreparable.isEmpty else {
                throw ServerConfiguration.Invalid(description: "the app's row-level security cannot run on the SQLite store (PostgreSQL refuses "
                                                  + "such a policy when it is created): \(unpreparable.joined(separator: "; "))")
            }
            if let given = configuration.jwtSecret { secret = given } else { secret = try await store.jwtSecret(orStore: ServerKeys.randomSecret()) }
            postgres = nil
            auth = store
            tables = SQLiteTables(store: store, app: app, policies: policies, clock: clock, configuration: configuration)
            channels = SQLiteChannelAuthorizer(store: store, app: app)
            catalog = SQLiteObjectCatalog(store: store, policy: app.storagePolicy)
            objectRoot = ObjectStorage.directory(for: configuration, sqlitePath: path!)
        }
        tokens = await TokenService(secret: secret, clock: clock, issuer: "convoy/auth/v1", ttl: configuration.tokenTTL)
        anonKey = try await tokens.apiKey(role: .anon)
        serviceRoleKey = try await tokens.apiKey(role: .serviceRole)
        let hub = self.hub
        let sqlite = (tables as? SQLiteTables)?.context
        housekeeper = Housekeeper(app: app, context: HousekeepingContext(sqlite: sqlite, postgres: postgres, clock: clock, configuration: configuration,
                                                                         channelUsers: { hub.privateChannelUsers() }),
                                  every: app.housekeepingEvery(configuration), logger: logger)
        idleSweep = RealtimeIdleSweep(hub: hub, clock: clock, timeout: configuration.limits.idleTimeout)
        let files = ObjectFiles(root: objectRoot)
        try files.prepare()
        let objects = ObjectStorage(catalog: catalog, files: files, signer: SignedURLs(keys: tokens.keys, clock: clock), clock: clock,
                                    sizeLimit: configuration.objectSizeLimit, logger: logger)
        self.objects = objects
        purger = RetentionPurger(tables: tables, clock: clock, retention: configuration.retention, every: configuration.purgeEvery,
                                 logger: logger, after: { try await objects.sweepOrphans() })
    }

    /// A server made and never run (or run and stopped) leaves no temporary database behind.
    deinit {
        if let dir = temporaryDirectory { try? FileManager.default.removeItem(at: dir) }
    }

    /// One retention purge now (the background job runs this every `purgeEvery`).
    @discardableResult
    public func purgeOnce() async throws -> Int { try await purger.purgeOnce() }

    /// One round of the app's housekeeping now (the background job runs it every `housekeepingEvery`); what it did.
    @discardableResult
    public func housekeepingOnce() async throws -> [String] { try await housekeeper.once() }
    /// The retention hook for Storage, whichever the store: deletes objects as
    /// the server, rows and bytes. Returns how many went. (An app's SQLite
    /// purge has `SQLiteAppContext.removeObjects`.)
    @discardableResult
    public func removeObjects(bucket: String, names: [String]) async throws -> Int {
        try await objects.purge(bucket: bucket, names: names)
    }

    /// One sweep of idle Realtime sockets now (the background job runs it every sixth of
    /// the idle timeout): closes those whose client sent nothing for `limits.idleTimeout`; how many.
    @discardableResult
    public func closeIdleRealtime() -> Int { idleSweep.once() }

    /// The purge loop with an injected wait, for tests in compressed time.
    func runPurges(every: Double, sleep: @escaping @Sendable (Double) async throws -> Void) async {
        await purger.loop(every: every, sleep: sleep)
    }

    /// Serves until cancelled, or until one of `signals` arrives and a
    /// graceful shutdown has stopped it. `onReady` gets the keys with the URL
    /// of the bound port (useful with port 0).
    ///
    /// The server's parts are services of one `ServiceGroup`: the PostgreSQL
    /// client and change feed (PostgreSQL store), the retention purge (unless
    /// `purgeEvery` is 0) and the HTTP application. They start together and
    /// stop in the reverse order: the application first (no new requests, the
    /// ones in flight finish), the purge, the change feed, the client last.
    public func run(gracefulShutdownSignals signals: [UnixSignal] = [],
                    onReady: @escaping @Sendable (ServerKeys) async -> Void = { _ in }) async throws {
        let support = RequestSupport(tokens: tokens, bodyLimit: configuration.bodyLimit)
        let router = Router(context: ClientRequestContext.self)
        router.add(middleware: APIKeyMiddleware(support: support))
        if !rateLimiter.limits.isEmpty { router.add(middleware: RateLimitMiddleware(limiter: rateLimiter, support: support)) }
        AuthRoutes(auth: AuthService(store: auth, tokens: tokens, clock: clock, passwordHash: configuration.passwordHash),
                   support: support).add(to: router)
        RESTRoutes(rest: tables, support: support).add(to: router)
        ObjectStorageRoutes(storage: objects, support: support).add(to: router)
        let wsRouter = Router(context: RealtimeRequestContext.self)
        RealtimeRoutes(hub: hub, tokens: tokens, authorizer: channels, clock: clock).add(to: wsRouter)

        // Realtime fed by the database's notifications is listening before the
        // server says it is ready, so no change committed after that is missed.
        let (listening, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let waitsForListen = postgres != nil
        let (host, anon, service, logger) = (configuration.host, anonKey, serviceRoleKey, logger)
        let app = Application(
            router: router,
            server: Self.httpServer(webSocketRouter: wsRouter, limits: configuration.limits),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "convoy"),
            onServerRunning: { channel in
                await AcceptPause.install(on: channel, logger: logger)
                if waitsForListen {
                    var ready = listening.makeAsyncIterator()
                    _ = await ready.next()
                }
                let port = channel.localAddress?.port ?? 0
                await onReady(ServerKeys(url: "http://\(host):\(port)", anonKey: anon, serviceRoleKey: service))
            },
            logger: logger)
        defer {
            if let dir = temporaryDirectory { try? FileManager.default.removeItem(at: dir) }
        }

        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let postgres {
            services.append(.init(service: postgres.client))
            services.append(.init(service: PostgresChanges(store: postgres, feed: feed, listening: { signal.yield() })))
        }
        if configuration.purgeEvery > 0 { services.append(.init(service: purger)) }
        if configuration.housekeeps, (housekeeper.every ?? 0) > 0 { services.append(.init(service: housekeeper)) }
        if configuration.sweepsIdleRealtime { services.append(.init(service: idleSweep)) }
        // The application ending (a graceful shutdown) ends the rest gracefully too.
        services.append(.init(service: app, successTerminationBehavior: .gracefullyShutdownGroup))
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: signals, logger: logger))
        try await CannotListen.naming(configuration) { try await group.run() }
    }
}

extension ReferenceServer {
    /// HTTP/1 with the Realtime upgrade, every connection held to `limits`: the
    /// decoder's header limits (431), the guard's clocks (408, idle close), and
    /// text frames checked for UTF-8 (1007).
    static func httpServer<Context: WebSocketRequestContext & RequestContext>(webSocketRouter: Router<Context>, limits: ConnectionLimits)
        -> HTTPServerBuilder {
        let decoder = HTTP1Channel.Configuration.DecoderConfiguration(
            maxHeaderFieldSize: limits.maxHeaderFieldBytes, maxHeaderListSize: limits.maxHeaderBytes,
            maxHeaderFieldCount: limits.maxHeaderCount)
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(httpDecoderConfiguration: decoder),
            // No pings of its own, as Supabase's Realtime sends none: an idle socket is closed by
            // `RealtimeIdleSweep` instead (Phoenix's idle timeout).
            ws: .init(maxFrameSize: RealtimeRoutes.maxMessage, autoPing: .disabled, validateUTF8: true))
        let webSocketResponder = webSocketRouter.buildResponder()
        return HTTPServerBuilder { responder in
            GuardedHTTPChannel(
                base: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder,
                                                   configuration: configuration),
                limits: limits)
        }
    }
}

/// `convoy serve` could not bind its address.
public struct CannotListen: Error, CustomStringConvertible {
    public let address: String
    public let reason: String
    public var description: String { "cannot listen on \(address): \(reason)" }

    /// Runs a server's `body`, turning a bind that failed (the port in use, not permitted) into this.
    static func naming(_ configuration: ServerConfiguration, _ body: () async throws -> Void) async throws {
        try await naming(address: "\(configuration.host):\(configuration.port)", body)
    }

    /// Runs `body` (a server that binds `address`), turning a bind that failed into this (NIO's own text says less).
    public static func naming(address: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as IOError where error.errnoCode == EADDRINUSE || error.errnoCode == EACCES {
            throw CannotListen(address: address, reason: error.errnoCode == EADDRINUSE ? "the port is in use" : "permission denied")
        }
    }
}
