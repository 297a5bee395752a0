import ConvoySodium
import Foundation

/// Everything `convoy serve` can be told. Defaults are the PRD's (port 3010,
/// 10-minute retention purged every minute).
public struct ServerConfiguration: Sendable {
    /// The app whose backend is served (`ServerApps.names`).
    public var app: String
    /// PostgreSQL only: where the app's tables come from — its own SQL, applied at start (`builtIn`), or the
    /// database as it is (`database`: e.g. loaded from `convoy schema APP`); the platform's SQL is applied either way.
    public var appSchema: AppSchema = .builtIn

    public enum AppSchema: String, Sendable, CaseIterable {
        case builtIn = "built-in"
        case database
    }
    public var host: String
    /// 0 picks a free port (tests, `target: embedded`).
    public var port: Int
    /// SQLite file, or a `postgres://` / `postgresql://` URL; nil makes an
    /// SQLite file in a fresh temporary directory.
    public var databasePath: String?
    /// Extra SQL files applied in name order after the app's (PostgreSQL only).
    public var migrationsDirectory: String?
    /// Most connections the PostgreSQL store opens (plus one for LISTEN).
    public var postgresConnections: Int
    /// HS256 secret for every JWT; nil makes a random one.
    public var jwtSecret: String?
    /// What the app's purge deletes is older than this, seconds.
    public var retention: Double
    /// Seconds between purges; 0 disables the purge job.
    public var purgeEvery: Double
    /// Lifetime of access tokens, seconds.
    public var tokenTTL: Double
    /// The app's stricter policies where it has them (Green Box: locations
    /// may be posted to active friends only).
    public var strictPolicies: Bool
    /// Argon2id cost for passwords.
    public var passwordHash: PasswordHash
    /// Largest request body, bytes (larger: 413).
    public var bodyLimit: Int
    /// Lifetime of invite codes, seconds.
    public var inviteTTL: Double
    /// Header, body and idle timeouts and header limits for each connection.
    public var limits = ConnectionLimits()
    /// The served app's own settings, by name: each app's folder declares its own as typed properties with their defaults
    /// (an extension of this type, e.g. a daily job's interval) and checks them in its `ServerKind.refuse`.
    public var appSettings: [String: Double] = [:]
    /// The served app's own settings that are names, as `appSettings` (a migrations folder's purge table).
    public var appTexts: [String: String] = [:]
    /// Whether the app's housekeeping (auto-end) runs on its own; tests run it by hand (`housekeepingOnce`).
    public var housekeeps = true
    /// Whether Realtime sockets idle for `limits.idleTimeout` are closed on their own (every
    /// sixth of it); tests close them by hand (`closeIdleRealtime`).
    public var sweepsIdleRealtime = true
    /// Where Storage keeps object bytes (`--storage-dir`). Nil: beside the SQLite
    /// file (`<file>.objects`), or with PostgreSQL a temporary directory removed
    /// at shutdown.
    public var objectStorageDirectory: String?
    /// The largest object an upload may store, bytes (`--storage-file-limit`;
    /// 50 MB, Supabase's free plan); a bucket's `file_size_limit` can only lower it.
    public var objectSizeLimit = 50_000_000
    /// The served app weakened on purpose (`--weaken`): the names of the rules it undoes, each one of the app's own
    /// (`ServerKind.weaknessNames`; its folder reads them typed), to show a run or a probe catching it.
    public var weaknesses: Set<String> = []
    /// Rate limits on the Supabase apps' routes (`--rate-limits`): none here, hosted Supabase Auth's for
    /// `convoy serve` (`RateLimits.supabase`). `--migrations DIR` may add its own (`DIR/rate-limits.yaml`).
    public var rateLimits = RateLimits.off
    /// Whether limits are on at all: `--rate-limits off` turns off the migrations folder's too.
    public var rateLimitsEnabled = true

    public init(host: String = "127.0.0.1", port: Int = 3010, databasePath: String? = nil, jwtSecret: String? = nil,
                retention: Double = 600, purgeEvery: Double = 60, tokenTTL: Double = 3600, strictPolicies: Bool = false,
                passwordHash: PasswordHash = .minimum, bodyLimit: Int = 64 * 1024, inviteTTL: Double = 7 * 86_400,
                migrationsDirectory: String? = nil, postgresConnections: Int = 20, app: String = ServerApps.defaultName) {
        self.app = app
        self.host = host
        self.migrationsDirectory = migrationsDirectory
        self.postgresConnections = postgresConnections
        self.port = port
        self.databasePath = databasePath
        self.jwtSecret = jwtSecret
        self.retention = retention
        self.purgeEvery = purgeEvery
        self.tokenTTL = tokenTTL
        self.strictPolicies = strictPolicies
        self.passwordHash = passwordHash
        self.bodyLimit = bodyLimit
        self.inviteTTL = inviteTTL
    }

    /// The limits the server enforces: `rateLimits`, with the migrations folder's file on top; none when off.
    public func effectiveRateLimits() throws(Invalid) -> RateLimits {
        guard rateLimitsEnabled else { return .off }
        guard let dir = migrationsDirectory else { return rateLimits }
        let file = URL(fileURLWithPath: dir).appendingPathComponent(RateLimits.migrationsFile).path
        guard FileManager.default.fileExists(atPath: file) else { return rateLimits }
        return rateLimits.merging(try RateLimitFile.load(file))
    }

    /// The PostgreSQL URL when `databasePath` is one.
    public var postgresURL: String? {
        guard let d = databasePath, d.hasPrefix("postgres://") || d.hasPrefix("postgresql://") else { return nil }
        return d
    }

    /// For tests: a free port, short-lived everything, no background purge.
    public static let testing: ServerConfiguration = {
        var c = ServerConfiguration(port: 0, purgeEvery: 0)
        c.housekeeps = false
        c.sweepsIdleRealtime = false
        return c
    }()

    /// A duration `convoy serve` takes: from `low` to ten years (beyond it, timestamps stop being dates), seconds.
    public static func check(_ name: String, _ value: Double, from low: Double) throws(Invalid) {
        let decade = 10 * 365.25 * 86_400
        guard value.isFinite, value >= low, value <= decade else {
            throw Invalid(description: "the \(name) must be between \(low) s and 10 years, got \(value) s")
        }
    }

    /// HS256 needs a key at least as long as its 32-byte hash (jwt-kit asserts
    /// it; GoTrue requires 32 characters too).
    public static let minimumSecretBytes = 32

    /// What `ReferenceServer` refuses to start with, in words for the user.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public func validate() throws(Invalid) {
        guard ServerApps.names.contains(app) else {
            throw Invalid(description: "--app: unknown app '\(app)'; the apps convoy serve serves: \(ServerApps.names.joined(separator: ", "))")
        }
        if let s = jwtSecret, s.utf8.count < Self.minimumSecretBytes {
            throw Invalid(description: "the JWT secret must be at least \(Self.minimumSecretBytes) bytes (it has \(s.utf8.count))")
        }
        guard (0...65_535).contains(port) else { throw Invalid(description: "the port must be 0…65535, got \(port)") }
        for (name, value, low) in [("retention", retention, 1e-3), ("token TTL", tokenTTL, 1), ("invite TTL", inviteTTL, 1),
                                   ("purge interval", purgeEvery, 0)] {
            try Self.check(name, value, from: low)
        }
        if !ServerApps.isSupabase(app), migrationsDirectory != nil || appSchema == .database || strictPolicies {
            throw Invalid(description: "--migrations, --app-schema database and --strict-policies are for the Supabase apps; \(app) serves its own schema")
        }
        try ServerApps.kind(app)?.refuse(self)
        let own = Set(ServerApps.kind(app)?.weaknessNames ?? [])
        if let stranger = weaknesses.sorted().first(where: { !own.contains($0) }) {
            let owner = ServerApps.kinds.first { $0.weaknessNames.contains(stranger) }.map { ": it is \($0.appName)'s (--app \($0.appName))" } ?? ""
            throw Invalid(description: "--weaken \(stranger) is not one of \(app)'s rules\(owner)")
        }
        guard (1...(64 << 20)).contains(bodyLimit) else { throw Invalid(description: "the body limit must be 1 B…64 MiB") }
        if let dir = migrationsDirectory {
            guard postgresURL != nil || ServerApps.kind(app)?.servesMigrationsAlone == true else {
                throw Invalid(description: "--migrations needs a PostgreSQL database (--database postgres://…): the SQLite store serves the app's schema only "
                              + "(or --app migrations: the folder alone, on either store)")
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw Invalid(description: "the migrations directory \(dir) does not exist")
            }
        }
        if appSchema == .database, strictPolicies {
            throw Invalid(description: "--strict-policies chooses among the app's own policies; with --app-schema database the database's policies are what they are")
        }
        if appSchema == .database, postgresURL == nil {
            throw Invalid(description: "--app-schema database needs a PostgreSQL database (--database postgres://…): the SQLite store has only the app's built-in tables")
        }
        _ = try effectiveRateLimits()
        guard (1...1000).contains(postgresConnections) else { throw Invalid(description: "the PostgreSQL pool size must be 1…1000") }
        guard (1...500_000_000_000).contains(objectSizeLimit) else {
            throw Invalid(description: "the storage file size limit must be 1B…500GB, got \(objectSizeLimit) bytes")
        }
        try limits.validate()
    }
}
