/// The apps `convoy serve --app NAME` can serve, by name.
public enum ServerApps {
    /// Every app's name, as `--app` takes it.
    public static let names = ["greenbox", "survale"]

    /// What `convoy serve` and the embedded server serve unless told otherwise.
    public static let defaultName = "greenbox"

    /// How long the app named `name` keeps its data unless told (`--retention`), seconds.
    public static func defaultRetention(of name: String) -> Double? { make(name)?.defaultRetention }

    /// The app named `name`; nil when there is none.
    static func make(_ name: String) -> (any ServerApp)? {
        switch name {
        case "greenbox": GreenBoxServer()
        case "survale": SurvaleServer()
        default: nil
        }
    }
}
