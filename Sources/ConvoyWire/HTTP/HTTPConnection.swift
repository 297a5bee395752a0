internal import CCurl

/// A device's own connection: requests sent on it share one connection cache
/// (`LoopHTTP`'s pool for the device, for plain HTTP; a libcurl share of
/// `CURL_LOCK_DATA_CONNECT` otherwise), apart from every other device's, so
/// each device keeps its own keep-alive connection.
public final class HTTPConnection: Sendable {
    let share: HTTPEngine.Handle
    private let engine: HTTPEngine
    /// The tunnel its requests go through (network conditions: `ShapingProxy`); nil: straight to the server.
    public let proxy: TunnelProxy?

    /// Made on the caller's thread (nothing else uses the share yet); used and
    /// freed on the engine's.
    public init(engine: HTTPEngine, proxy: TunnelProxy? = nil) throws(WireError) {
        self.proxy = proxy
        guard let s = curl_share_init() else { throw .libraryUnavailable("curl_share_init failed") }
        _ = convoy_share_setopt_long(s, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_CONNECT.rawValue))
        guard engine.register(HTTPEngine.Handle(pointer: s)) else {
            curl_share_cleanup(s)
            throw .shutdown
        }
        share = HTTPEngine.Handle(pointer: s)
        self.engine = engine
    }

    deinit { engine.release(share, of: ObjectIdentifier(self)) }
}
