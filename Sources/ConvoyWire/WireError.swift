/// Why a transport operation failed.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
        case libraryUnavailable
    }

    private let kind: Kind
    public let message: String

    private init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
    public static func == (lhs: WireError, rhs: WireError) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    static func libraryUnavailable(_ message: String) -> WireError { WireError(.libraryUnavailable, message) }
}
