/// One HTTP request, as the engine sends it.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    /// In order; a name may repeat.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?
    /// Whole-transfer limit, seconds (connect included).
    public var timeout: Double

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil,
                timeout: Double = 30) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// What came back, with what libcurl measured of the transfer.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Names lowercased; the last value of a repeated name wins.
    public var headers: [String: String]
    public var body: [UInt8]
    public var timing: Timing

    public struct Timing: Sendable {
        /// Seconds from the start of the transfer: connected, first response byte, done.
        public var connect: Double
        public var firstByte: Double
        public var total: Double
        /// New connections this transfer opened (0: it reused one).
        public var newConnections: Int
        /// "1.1", "2" …
        public var httpVersion: String
        /// Bytes of request (headers and body) and response (headers and body).
        public var bytesSent: Int
        public var bytesReceived: Int
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}
