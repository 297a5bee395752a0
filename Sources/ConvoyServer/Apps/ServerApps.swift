/// The apps `convoy serve --app NAME` can serve, by name.
public enum ServerApps {
    /// Every app's name, as `--app` takes it.
    public static let names = ["greenbox", "survale", QuickPicServer.appName, CloserServer.appName]

    /// The Supabase apps' names (`convoy schema` exports these).
    public static var supabaseNames: [String] { names.filter(isSupabase) }

    /// What `convoy serve` and the embedded server serve unless told otherwise.
    public static let defaultName = "greenbox"

    /// How long the app named `name` keeps its data unless told (`--retention`), seconds.
    public static func defaultRetention(of name: String) -> Double? {
        name == QuickPicServer.appName ? QuickPicServer.defaultRetention : make(name)?.defaultRetention
    }

    /// How often the app's purge runs unless told (`--purge-every`), seconds.
    public static func defaultPurgeEvery(of name: String) -> Double {
        name == QuickPicServer.appName ? QuickPicServer.defaultPurgeEvery : 60
    }

    /// How long its access tokens live unless told (`--token-ttl`), seconds.
    public static func defaultTokenTTL(of name: String) -> Double {
        name == QuickPicServer.appName ? QuickPicServer.defaultTokenTTL : 3_600
    }

    /// How long its invite codes live unless told (`--invite-ttl`), seconds: Closer's 24 h, Green Box's 7 days.
    public static func defaultInviteTTL(of name: String) -> Double {
        name == CloserServer.appName ? CloserServer.defaultInviteTTL : 7 * 86_400
    }

    /// Whether it is a Supabase app (`ReferenceServer`: auth, PostgREST, Realtime, Storage); QuickPic is not.
    public static func isSupabase(_ name: String) -> Bool { make(name) != nil }

    /// The Supabase app named `name`; nil when there is none (or it is not a Supabase app).
    static func make(_ name: String) -> (any ServerApp)? {
        switch name {
        case "greenbox": GreenBoxServer()
        case "survale": SurvaleServer()
        default: nil
        }
    }
}
