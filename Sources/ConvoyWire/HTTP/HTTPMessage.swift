/// One HTTP request, as the engine sends it.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    /// In order; a name may repeat.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?
    /// Whole-transfer limit, seconds (connect included).
    public var timeout: Double
    /// Told how the transfer is going (libcurl's XFERINFOFUNCTION), on the
    /// engine's thread: keep it short. Nil: libcurl reports nothing.
    public var progress: (@Sendable (HTTPProgress) -> Void)?
    /// The most bytes of body the answer may have: past it the transfer is cut off and fails (`transport`, "larger
    /// than N bytes"), for answers from a server that is not trusted (nil: no limit).
    public var maxBodyBytes: Int?

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil,
                timeout: Double = 30, progress: (@Sendable (HTTPProgress) -> Void)? = nil, maxBodyBytes: Int? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.progress = progress
        self.maxBodyBytes = maxBodyBytes
    }
}

/// Bytes moved so far by a transfer, as libcurl counts them (totals 0 while unknown).
public struct HTTPProgress: Sendable, Equatable {
    public var uploaded: Int
    public var uploadTotal: Int
    public var downloaded: Int
    public var downloadTotal: Int

    public init(uploaded: Int, uploadTotal: Int, downloaded: Int, downloadTotal: Int) {
        self.uploaded = uploaded
        self.uploadTotal = uploadTotal
        self.downloaded = downloaded
        self.downloadTotal = downloadTotal
    }
}

/// What came back, with what the engine measured of the transfer.
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
