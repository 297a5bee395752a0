/// The apps `convoy serve --app NAME` can serve, by name.
public enum ServerApps {
    /// Every app's name, as `--app` takes it.
    public static let names = ["greenbox"]

    /// What `convoy serve` and the embedded server serve unless told otherwise.
    public static let defaultName = "greenbox"

    /// The app named `name`; nil when there is none.
    static func make(_ name: String) -> (any ServerApp)? {
        switch name {
        case "greenbox": GreenBoxServer()
        default: nil
        }
    }
}
