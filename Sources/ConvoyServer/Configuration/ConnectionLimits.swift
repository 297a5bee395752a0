/// What `convoy serve` allows one connection before it answers with an error
/// and closes it (docs/server.md, "Limits against hostile clients").
public struct ConnectionLimits: Sendable, Equatable {
    /// A request's head (request line and headers) must be complete this many
    /// seconds after its first byte (later: 408, closed).
    public var headerTimeout: Double
    /// A request's body must be complete this many seconds after its head (later: 408, closed).
    public var bodyTimeout: Double
    /// A connection with no request under way is closed after this many seconds.
    public var idleTimeout: Double
    /// Largest request line or header field, bytes (larger: 431, closed).
    public var maxHeaderFieldBytes: Int
    /// Largest head, request line and all header fields, bytes (larger: 431, closed).
    public var maxHeaderBytes: Int
    /// Most header fields in one request (more: 431, closed).
    public var maxHeaderCount: Int

    public init(headerTimeout: Double = 10, bodyTimeout: Double = 30, idleTimeout: Double = 60,
                maxHeaderFieldBytes: Int = 16 * 1024, maxHeaderBytes: Int = 64 * 1024, maxHeaderCount: Int = 100) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxHeaderFieldBytes = maxHeaderFieldBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
    }

    /// What `ReferenceServer` refuses, in words for the user.
    func validate() throws(ServerConfiguration.Invalid) {
        for (name, value) in [("header timeout", headerTimeout), ("body timeout", bodyTimeout), ("idle timeout", idleTimeout)] {
            guard value.isFinite, value >= 0.01, value <= 86_400 else {
                throw ServerConfiguration.Invalid(description: "the \(name) must be between 10 ms and 1 day, got \(value) s")
            }
        }
        guard (256...(1 << 20)).contains(maxHeaderFieldBytes), (maxHeaderFieldBytes...(4 << 20)).contains(maxHeaderBytes) else {
            throw ServerConfiguration.Invalid(description: "a header field may be 256 B…1 MiB and the whole head that or more, up to 4 MiB")
        }
        guard (1...10_000).contains(maxHeaderCount) else {
            throw ServerConfiguration.Invalid(description: "the header count limit must be 1…10000")
        }
    }
}
