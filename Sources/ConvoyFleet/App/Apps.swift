/// What the registry needs of an app, declared in the app's own folder: its `app:` name, the modes a
/// scenario can choose, how it is made in the modes chosen, and the placeholders its probe casts fill.
protocol RegisteredApp: AppProfile {
    static var appName: String { get }
    /// Option name → its values, the first the default.
    static var modes: [(option: String, values: [String])] { get }
    /// Per-party placeholders its probe cast fills (`{{victim.operation}}`).
    static var probeFields: [String] { get }
    /// Run-wide placeholders its cast fills (`{{message.attacker_to_friend.content}}`).
    static var probeNames: [String] { get }
    static func make(_ options: AppOptions) -> Self
}

extension RegisteredApp {
    static var modes: [(option: String, values: [String])] { [] }
    static var probeFields: [String] { [] }
    static var probeNames: [String] { [] }
}

/// The apps a scenario can name with `app:` (docs/scenarios.md), each with
/// the modes its scenario can choose.
public enum Apps {
    /// The registry: one line an app.
    static let registered: [any RegisteredApp.Type] = [GreenBoxApp.self, SurvaleApp.self, QuickPicApp.self, CloserApp.self]

    /// The apps Convoy simulates, by `app:` name.
    public static let names = registered.map { $0.appName }

    /// Per-party placeholders the apps' probe casts fill (`{{victim.operation}}`), for catalogues to name.
    public static let probeFields = registered.flatMap { $0.probeFields }

    /// Run-wide placeholders the apps' casts fill (`{{message.attacker_to_friend.content}}`), for catalogues to name.
    public static let probeNames = registered.flatMap { $0.probeNames }

    /// The default when a scenario names none.
    public static let defaultName = GreenBoxApp.appName

    /// Each app's modes: option name → its values, the first the default.
    public static func modes(of name: String) -> [(option: String, values: [String])]? {
        registered.first { $0.appName == name }?.modes
    }

    /// The app named `name` in the modes `options` choose; nil: no such app,
    /// or an option it does not have (`ScenarioFile` checks both first).
    public static func make(_ name: String, options: AppOptions = AppOptions()) -> (any AppProfile)? {
        registered.first { $0.appName == name }?.make(options)
    }
}

/// The modes a scenario chose for its app (`app: {name: greenbox, payload: prd}`),
/// by option name; an option not given takes its default (the first value in `Apps.modes`).
public struct AppOptions: Sendable, Equatable {
    public var values: [String: String]

    public init(_ values: [String: String] = [:]) { self.values = values }

    public subscript(_ option: String) -> String? { values[option] }
}
