/// Why the gpsd source could not start or lost its connection.
public struct GPSDError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable { case badAddress, unreachable, connectionLost, watchFailed }

    private let kind: Kind
    public let message: String
    /// The option at fault (`gpsd`), for input errors.
    public let key: String?

    private init(_ kind: Kind, _ message: String, key: String? = nil) {
        self.kind = kind
        self.message = message
        self.key = key
    }

    public var description: String { key.map { "--\($0): \(message)" } ?? message }

    public static func == (lhs: GPSDError, rhs: GPSDError) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// `HOST:PORT` that cannot be parsed.
    public static let badAddress = GPSDError(.badAddress, "bad gpsd address")
    /// gps_open failed: nothing listening, name not resolved.
    public static let unreachable = GPSDError(.unreachable, "gpsd unreachable")
    /// gpsd closed the connection (or sent what is not gpsd's).
    public static let connectionLost = GPSDError(.connectionLost, "connection to gpsd lost")
    /// gps_stream could not send the WATCH request.
    public static let watchFailed = GPSDError(.watchFailed, "cannot watch gpsd")

    /// True when the environment is at fault (gpsd away), not the input.
    public var isRuntimeFailure: Bool { kind != .badAddress }

    static func badAddress(_ m: String, key: String) -> GPSDError { GPSDError(.badAddress, m, key: key) }
    static func unreachable(_ m: String) -> GPSDError { GPSDError(.unreachable, m) }
    static func connectionLost(_ m: String) -> GPSDError { GPSDError(.connectionLost, m) }
    static func watchFailed(_ m: String) -> GPSDError { GPSDError(.watchFailed, m) }
}
