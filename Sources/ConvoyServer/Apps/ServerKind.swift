import ConvoyTime
import Logging

/// One kind of server `convoy serve --app NAME` runs, declared in its app's folder: its name, what it does
/// unless told, and how it opens. `ServerApps.kinds` lists them, one line an app; nothing else in the platform
/// names an app.
protocol ServerKind: SendableMetatype {
    /// Its name for `--app`.
    static var appName: String { get }
    /// The Supabase app `ReferenceServer` serves (auth, PostgREST, Realtime, Storage around its schema); nil for
    /// an app with a server of its own.
    static var supabaseApp: (any ServerApp)? { get }
    /// Its server for `configuration`, its database opened.
    static func open(_ configuration: ServerConfiguration, clock: any ConvoyClock, logger: Logger) async throws -> any BackendServer
    /// What it does unless told.
    static var defaults: ServerDefaults { get }
    /// The rules `--weaken` can undo on it (none: the flag is not for it); its folder reads them typed from
    /// `ServerConfiguration.weaknesses`.
    static var weaknessNames: [String] { get }
    /// What it cannot serve of `configuration` (Closer: a PostgreSQL database), said before anything opens.
    static func refuse(_ configuration: ServerConfiguration) throws(ServerConfiguration.Invalid)
    /// Whether it has no tables of its own and serves a `--migrations` folder alone, on either store (others apply one
    /// after their own SQL, on PostgreSQL only); it then has no schema for `convoy schema` to export.
    static var servesMigrationsAlone: Bool { get }
}

extension ServerKind {
    static var supabaseApp: (any ServerApp)? { nil }
    static var defaults: ServerDefaults { ServerDefaults(retention: supabaseApp?.defaultRetention) }
    static var weaknessNames: [String] { [] }

    /// Reads `--weaken NAME,…` into `configuration` (each name undoes one of its rules on purpose); nil when it has
    /// no weaknesses, a failure naming the first name it does not know.
    static func weaken(_ names: String, into configuration: inout ServerConfiguration) -> Result<Void, UnknownWeakness>? {
        guard !weaknessNames.isEmpty else { return nil }
        return UnknownWeakness.names(names, known: weaknessNames).map { configuration.weaknesses.formUnion($0) }
    }
    static func refuse(_ configuration: ServerConfiguration) throws(ServerConfiguration.Invalid) {}
    static var servesMigrationsAlone: Bool { false }
}

/// A Supabase app is served by `ReferenceServer` around its `ServerApp`.
protocol SupabaseServerKind: ServerKind, ServerApp {
    init()
}

extension SupabaseServerKind {
    static var supabaseApp: (any ServerApp)? { Self() }
    static func open(_ configuration: ServerConfiguration, clock: any ConvoyClock, logger: Logger) async throws -> any BackendServer {
        try await ReferenceServer(configuration: configuration, clock: clock, logger: logger)
    }
}

/// What a server kind does unless `convoy serve` is told otherwise, seconds.
struct ServerDefaults {
    /// How long it keeps its data (`--retention`); nil: the caller's default.
    var retention: Double?
    /// How often its purge runs (`--purge-every`).
    var purgeEvery: Double = 60
    /// How long its access tokens live (`--token-ttl`).
    var tokenTTL: Double = 3_600
    /// How long its invite codes live (`--invite-ttl`).
    var inviteTTL: Double = 7 * 86_400
}
