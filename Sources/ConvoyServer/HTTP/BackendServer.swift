import ConvoyTime
import Logging
import UnixSignals

/// What `convoy serve --app NAME` runs: the Supabase-compatible `ReferenceServer` for the Supabase apps
/// (Green Box, Survale), or an app's own server when the app is not a Supabase app (QuickPic's REST API).
public protocol BackendServer: AnyObject, Sendable {
    /// Serves until cancelled or until one of `signals` has stopped it gracefully; `onReady` gets the bound URL
    /// and, for a Supabase app, its keys (an app of its own has none: they are empty).
    func run(gracefulShutdownSignals signals: [UnixSignal], onReady: @escaping @Sendable (ServerKeys) async -> Void) async throws
    /// One retention purge now; how many rows went.
    @discardableResult
    func purgeOnce() async throws -> Int
    /// Whether it issues Supabase's API keys (anon, service_role).
    var hasAPIKeys: Bool { get }
}

extension ReferenceServer: BackendServer {
    public var hasAPIKeys: Bool { true }
}

public enum BackendServers {
    /// The server for `configuration.app`, its database opened (and made, with PostgreSQL, where missing).
    public static func make(_ configuration: ServerConfiguration, clock: any ConvoyClock = SystemClock(),
                            logger: Logger) async throws -> any BackendServer {
        // Each server validates its configuration as it opens.
        guard let kind = ServerApps.kind(configuration.app) else {
            throw ServerConfiguration.Invalid(description: "--app: unknown app '\(configuration.app)'; the apps convoy serve serves: \(ServerApps.names.joined(separator: ", "))")
        }
        return try await kind.open(configuration, clock: clock, logger: logger)
    }
}
