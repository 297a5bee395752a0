/// The apps `convoy serve --app NAME` can serve, by name: one line an app in `kinds`, each kind declared in its
/// app's folder (`ServerKind`).
public enum ServerApps {
    static let kinds: [any ServerKind.Type] = [
        GreenBoxServer.self,
        SurvaleServer.self,
        QuickPicServer.self,
        CloserServer.self,
        MigrationsServer.self,
    ]

    /// Every app's name, as `--app` takes it.
    public static let names = kinds.map { $0.appName }

    /// The Supabase apps' names (`convoy schema` exports these).
    public static var supabaseNames: [String] { kinds.filter { $0.supabaseApp != nil && !$0.servesMigrationsAlone }.map { $0.appName } }

    /// What `convoy serve` and the embedded server serve unless told otherwise.
    public static let defaultName = GreenBoxServer.appName

    static func kind(_ name: String) -> (any ServerKind.Type)? { kinds.first { $0.appName == name } }

    /// How long the app named `name` keeps its data unless told (`--retention`), seconds.
    public static func defaultRetention(of name: String) -> Double? { kind(name)?.defaults.retention }

    /// How often the app's purge runs unless told (`--purge-every`), seconds.
    public static func defaultPurgeEvery(of name: String) -> Double { kind(name)?.defaults.purgeEvery ?? ServerDefaults().purgeEvery }

    /// How long its access tokens live unless told (`--token-ttl`), seconds.
    public static func defaultTokenTTL(of name: String) -> Double { kind(name)?.defaults.tokenTTL ?? ServerDefaults().tokenTTL }

    /// How long its invite codes live unless told (`--invite-ttl`), seconds: Closer's 24 h, Green Box's 7 days.
    public static func defaultInviteTTL(of name: String) -> Double { kind(name)?.defaults.inviteTTL ?? ServerDefaults().inviteTTL }

    /// Whether it is a Supabase app (`ReferenceServer`: auth, PostgREST, Realtime, Storage); QuickPic is not.
    public static func isSupabase(_ name: String) -> Bool { make(name) != nil }

    /// The Supabase app named `name`; nil when there is none (or it is not a Supabase app).
    static func make(_ name: String) -> (any ServerApp)? { kind(name)?.supabaseApp }

    /// The apps `--weaken` applies to.
    public static var weakenable: [String] { kinds.filter { !$0.weaknessNames.isEmpty }.map { $0.appName } }

    /// Reads `--weaken NAME,…` for the app `configuration.app` into it: nil when that app has no weaknesses, else
    /// whether every name is one of its own.
    public static func weaken(_ names: String, into configuration: inout ServerConfiguration) -> Result<Void, UnknownWeakness>? {
        kind(configuration.app)?.weaken(names, into: &configuration)
    }
}
