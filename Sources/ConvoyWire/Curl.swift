internal import CCurl

/// The process-wide libcurl state. The HTTP engine (multi interface) builds on
/// this; `curl_global_init` must run once before any handle is made.
public enum Curl {
    private static let initCode: CURLcode = convoy_curl_global_init()

    /// Initialises libcurl once; throws if the library refuses.
    public static func ensureReady() throws(WireError) {
        guard initCode == CURLE_OK else {
            throw WireError.libraryUnavailable("curl_global_init failed: \(String(cString: curl_easy_strerror(initCode)))")
        }
    }

    /// Version and build features of the libcurl in use, for `convoy --version`.
    public static var versionDescription: String {
        guard let info = convoy_curl_version_info() else { return "libcurl (unknown)" }
        let version = String(cString: info.pointee.version)
        let ssl = info.pointee.ssl_version.map { String(cString: $0) } ?? "no TLS"
        let http2 = info.pointee.features & Int32(CURL_VERSION_HTTP2) != 0
        return "libcurl \(version) (\(ssl)\(http2 ? ", HTTP/2" : ""))"
    }
}
