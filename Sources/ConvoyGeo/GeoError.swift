/// Why a track, GPX or NMEA input could not be read, or a geo parameter is bad.
///
/// `description` is `file:line:column: message` when the position is known,
/// which editors and CI logs turn into links.
public struct GeoError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
        case malformedXML, badValue, missingValue, unreadable, cannotWrite, noTrack, badParameter, badNMEA
    }

    private let kind: Kind
    public let message: String
    public let file: String?
    public let line: Int?
    public let column: Int?
    /// The element, attribute or option at fault (e.g. `trkpt@lat`).
    public let key: String?

    private init(_ kind: Kind, _ message: String, file: String? = nil, line: Int? = nil,
                 column: Int? = nil, key: String? = nil) {
        self.kind = kind
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.key = key
    }

    public var description: String {
        var location = file ?? ""
        if let line { location += ":\(line)" }
        if let column { location += ":\(column)" }
        return location.isEmpty ? message : "\(location): \(message)"
    }

    public static func == (lhs: GeoError, rhs: GeoError) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    public static let malformedXML = GeoError(.malformedXML, "malformed XML")
    public static let badValue = GeoError(.badValue, "bad value")
    public static let missingValue = GeoError(.missingValue, "missing value")
    public static let unreadable = GeoError(.unreadable, "cannot read file")
    public static let cannotWrite = GeoError(.cannotWrite, "cannot write file")
    public static let noTrack = GeoError(.noTrack, "no replayable track")
    public static let badParameter = GeoError(.badParameter, "bad parameter")
    public static let badNMEA = GeoError(.badNMEA, "bad NMEA")

    static func malformedXML(_ m: String, file: String, line: Int, column: Int) -> GeoError {
        GeoError(.malformedXML, m, file: file, line: line, column: column)
    }
    static func badValue(_ m: String, file: String?, line: Int?, column: Int?, key: String) -> GeoError {
        GeoError(.badValue, m, file: file, line: line, column: column, key: key)
    }
    static func missingValue(_ m: String, file: String?, line: Int?, column: Int?, key: String) -> GeoError {
        GeoError(.missingValue, m, file: file, line: line, column: column, key: key)
    }
    static func unreadable(_ m: String, file: String) -> GeoError { GeoError(.unreadable, m, file: file) }
    static func cannotWrite(_ m: String, file: String) -> GeoError { GeoError(.cannotWrite, m, file: file) }

    /// True when the fault is the environment (a file that cannot be written),
    /// not the input: the CLI exits 1 for these, 2 for the rest.
    public var isRuntimeFailure: Bool { kind == .cannotWrite }

    /// The same error, placed in `file` at `line` where it had no place yet.
    func located(file: String?, line: Int?) -> GeoError {
        GeoError(kind, message, file: self.file ?? file, line: self.line ?? line, column: column, key: key)
    }
    static func noTrack(_ m: String, file: String?) -> GeoError { GeoError(.noTrack, m, file: file) }
    public static func badParameter(_ m: String, key: String) -> GeoError { GeoError(.badParameter, m, key: key) }
    static func badNMEA(_ m: String, file: String?) -> GeoError { GeoError(.badNMEA, m, file: file) }
}
