import ConvoySodium

/// Everything `convoy serve` can be told. Defaults are the PRD's (port 3010,
/// 10-minute retention purged every minute).
public struct ServerConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port (tests, `target: embedded`).
    public var port: Int
    /// SQLite file; nil makes one in a fresh temporary directory.
    public var databasePath: String?
    /// HS256 secret for every JWT; nil makes a random one.
    public var jwtSecret: String?
    /// Rows of `encrypted_locations` older than this are purged, seconds.
    public var retention: Double
    /// Seconds between purges; 0 disables the purge job.
    public var purgeEvery: Double
    /// Lifetime of access tokens, seconds.
    public var tokenTTL: Double
    /// Also restrict `encrypted_locations` inserts to active friends.
    public var strictPolicies: Bool
    /// Argon2id cost for passwords.
    public var passwordHash: PasswordHash
    /// Largest request body, bytes (larger: 413).
    public var bodyLimit: Int
    /// Lifetime of invite codes, seconds.
    public var inviteTTL: Double

    public init(host: String = "127.0.0.1", port: Int = 3010, databasePath: String? = nil, jwtSecret: String? = nil,
                retention: Double = 600, purgeEvery: Double = 60, tokenTTL: Double = 3600, strictPolicies: Bool = false,
                passwordHash: PasswordHash = .minimum, bodyLimit: Int = 64 * 1024, inviteTTL: Double = 7 * 86_400) {
        self.host = host
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

    /// For tests: a free port, short-lived everything, no background purge.
    public static let testing = ServerConfiguration(port: 0, purgeEvery: 0)
}
