/// The apps a scenario can name with `app:` (docs/scenarios.md), each with
/// the modes its scenario can choose.
public enum Apps {
    /// The apps Convoy simulates, by `app:` name.
    public static let names = ["greenbox", "survale", "quickpic", "closer"]

    /// Per-party placeholders the apps' probe casts fill (`{{victim.operation}}`), for catalogues to name.
    public static let probeFields = SurvaleApp.probeFields + CloserApp.probeFields

    /// Run-wide placeholders the apps' casts fill (`{{message.attacker_to_friend.content}}`), for catalogues to name.
    public static let probeNames = QuickPicApp.probeNames

    /// The default when a scenario names none.
    public static let defaultName = "greenbox"

    /// Each app's modes: option name → its values, the first the default.
    public static func modes(of name: String) -> [(option: String, values: [String])]? {
        switch name {
        case "greenbox": GreenBoxApp.modes
        case "survale": SurvaleApp.modes
        case "quickpic": QuickPicApp.modes
        case "closer": CloserApp.modes
        default: nil
        }
    }

    /// The app named `name` in the modes `options` choose; nil: no such app,
    /// or an option it does not have (`ScenarioFile` checks both first).
    public static func make(_ name: String, options: AppOptions = AppOptions()) -> (any AppProfile)? {
        switch name {
        case "greenbox": GreenBoxApp(options)
        case "survale": SurvaleApp()
        case "quickpic": QuickPicApp()
        case "closer": CloserApp()
        default: nil
        }
    }
}

/// The modes a scenario chose for its app (`app: {name: greenbox, payload: prd}`),
/// by option name; an option not given takes its default (the first value in `Apps.modes`).
public struct AppOptions: Sendable, Equatable {
    public var values: [String: String]

    public init(_ values: [String: String] = [:]) { self.values = values }

    public subscript(_ option: String) -> String? { values[option] }
}
