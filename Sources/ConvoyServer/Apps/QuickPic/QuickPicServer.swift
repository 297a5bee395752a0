import ConvoySodium
import ConvoyTime
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
        defer {
            if let dir = temporaryDirectory { try? FileManager.default.removeItem(at: dir) }
        }
        var services: [any Service] = []
        if let postgres { services.append(postgres.client) }
        if configuration.purgeEvery > 0 {
            services.append(PeriodicPurge(every: configuration.purgeEvery, clock: clock, logger: logger, label: "quickpic") { [self] in
                _ = try await purgeOnce()
            })
        }
        try await AppOwnServer.run(router, name: "quickpic", configuration: configuration, services: services, signals: signals,
                                   logger: logger, onReady: onReady)
    }
}

extension QuickPicServer: ServerKind {
    static func open(_ configuration: ServerConfiguration, clock: any ConvoyClock, logger: Logger) async throws -> any BackendServer {
        try await QuickPicServer(configuration: configuration, clock: clock, logger: logger)
    }

    static var defaults: ServerDefaults { ServerDefaults(retention: defaultRetention, purgeEvery: defaultPurgeEvery, tokenTTL: defaultTokenTTL) }

    static var weaknessNames: [String] { QuickPicWeakness.allCases.map(\.rawValue) }

    static func refuse(_ configuration: ServerConfiguration) throws(ServerConfiguration.Invalid) {
        guard (1...1_000_000).contains(configuration.loginLimit) else {
            throw ServerConfiguration.Invalid(description: "the login limit must be 1…1000000 failures, got \(configuration.loginLimit)")
        }
        try ServerConfiguration.check("login window", configuration.loginWindow, from: 1e-3)
    }
}

/// QuickPic's settings and weaknesses, as `convoy serve --app quickpic` is told them.
extension ServerConfiguration {
    /// QuickPic, weakened on purpose (`--weaken`, `--keep-acked`): each undoes one of its rules.
    public var quickPicWeaknesses: Set<QuickPicWeakness> {
        get { Set(weaknesses.compactMap(QuickPicWeakness.init(rawValue:))) }
        set { weaknesses = weaknesses.filter { QuickPicWeakness(rawValue: $0) == nil }.union(newValue.map(\.rawValue)) }
    }

    /// Failed logins allowed per username within `loginWindow` (20 × that per client address); default 5.
    public var loginLimit: Int {
        get { appSettings["login-limit"].map { Int(exactly: $0.rounded()) ?? 0 } ?? 5 }
        set { appSettings["login-limit"] = Double(newValue) }
    }

    /// The login limit's sliding window, seconds; default 15 minutes.
    public var loginWindow: Double {
        get { appSettings["login-window"] ?? 900 }
        set { appSettings["login-window"] = newValue }
    }
}
