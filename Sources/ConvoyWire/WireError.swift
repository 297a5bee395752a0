/// Why a transport operation failed.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        /// libcurl could not be initialised.
        case libraryUnavailable
        /// The request cannot be sent as given (a bad URL, an option libcurl refused).
        case invalidRequest
        /// Connecting, TLS or the transfer failed (DNS, refused, reset, certificate …).
        case transport
        /// The transfer did not finish within its timeout.
        case timeout
        /// The awaiting task was cancelled.
        case cancelled
        /// The engine was shut down.
        case shutdown
    }

    public let kind: Kind
    public let message: String

    private init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
    public static func == (lhs: WireError, rhs: WireError) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    static func libraryUnavailable(_ message: String) -> WireError { WireError(.libraryUnavailable, message) }
    static func invalidRequest(_ message: String) -> WireError { WireError(.invalidRequest, message) }
    static func transport(_ message: String) -> WireError { WireError(.transport, message) }
    static func timeout(_ message: String) -> WireError { WireError(.timeout, message) }
    /// An answer past the request's `maxBodyBytes`.
    static func tooLarge(_ most: Int) -> WireError { WireError(.transport, "the answer is larger than \(most) bytes (the request's limit): cut off") }
    static let cancelled = WireError(.cancelled, "cancelled")
    static let shutdown = WireError(.shutdown, "the HTTP engine was shut down")
}
