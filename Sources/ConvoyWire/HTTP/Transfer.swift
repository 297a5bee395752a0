internal import CCurl
import Foundation
import Synchronization

/// One transfer's state. Touched by the engine thread only, except
/// `continuation` (set before the transfer is posted) and `cancelRequested`.
/// `@unchecked` because the compiler cannot see that confinement: the transfer reaches the engine thread in a
/// `Command` through the Mutex-guarded queue (which orders the hand-over), libcurl's callbacks run on that thread,
/// and `cancelRequested` is atomic (`HTTPEngineTests` on the libcurl path, under `make test-tsan`).
final class Transfer: @unchecked Sendable {
    let request: HTTPRequest
    /// Held so that its connection cache outlives the transfer.
    let connection: HTTPConnection?
    var continuation: CheckedContinuation<HTTPResponse, any Error>?
    let cancelRequested = Atomic(false)
    private(set) var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var proxyHeaderList: UnsafeMutablePointer<curl_slist>?
    var status = 0
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    /// The body went past the request's `maxBodyBytes` and the transfer was cut off.
    var tooLarge = false
    /// CURL_ERROR_SIZE bytes for libcurl's own error text.
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    init(request: HTTPRequest, connection: HTTPConnection?) {
        self.request = request
        self.connection = connection
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit { errorBuffer.deallocate() }  // `finish` freed the handle

    /// Makes the easy handle; on a bad request, finishes with the error and returns nil.
    func start() -> UnsafeMutableRawPointer? {
        guard let h = curl_easy_init() else {
            finish(.failure(.libraryUnavailable("curl_easy_init failed")))
            return nil
        }
        easy = h
        let me = Unmanaged.passUnretained(self).toOpaque()
        var ok = convoy_easy_setopt_ptr(h, CURLOPT_URL, request.url) == CURLE_OK
        ok = ok && convoy_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1) == CURLE_OK
        _ = convoy_easy_setopt_ptr(h, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = convoy_easy_setopt_ptr(h, CURLOPT_PRIVATE, me)
        _ = convoy_easy_setopt_write(h, CURLOPT_WRITEFUNCTION, Transfer.onBody)
        _ = convoy_easy_setopt_ptr(h, CURLOPT_WRITEDATA, me)
        _ = convoy_easy_setopt_write(h, CURLOPT_HEADERFUNCTION, Transfer.onHeader)
        _ = convoy_easy_setopt_ptr(h, CURLOPT_HEADERDATA, me)
        if request.progress != nil {
            _ = convoy_easy_setopt_xferinfo(h, Transfer.onProgress)
            _ = convoy_easy_setopt_ptr(h, CURLOPT_XFERINFODATA, me)
            _ = convoy_easy_setopt_long(h, CURLOPT_NOPROGRESS, 0)
        }
        // At most a day; an infinite or absurd timeout means that.
        let timeout = request.timeout.isFinite ? min(max(1, request.timeout * 1000), 86_400_000) : 86_400_000
        _ = convoy_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, Int(timeout))
        _ = convoy_easy_setopt_long(h, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // Wait for a connection being set up, to multiplex on it, only where HTTP/2 is possible
        // (TLS): over plain HTTP/1.1 that wait would queue every transfer behind one handshake.
        if request.url.hasPrefix("https://") { _ = convoy_easy_setopt_long(h, CURLOPT_PIPEWAIT, 1) }
        if let connection { _ = convoy_easy_setopt_ptr(h, CURLOPT_SHARE, connection.share.pointer) }
        if let proxy = connection?.proxy {
            // A CONNECT tunnel even for plain HTTP, whatever NO_PROXY says; the phone's header goes to the proxy only.
            ok = ok && convoy_easy_setopt_ptr(h, CURLOPT_PROXY, proxy.url) == CURLE_OK
            _ = convoy_easy_setopt_ptr(h, CURLOPT_NOPROXY, "")
            _ = convoy_easy_setopt_long(h, CURLOPT_HTTPPROXYTUNNEL, 1)
            _ = convoy_easy_setopt_long(h, CURLOPT_HEADEROPT, 1)  // CURLHEADER_SEPARATE
            proxyHeaderList = curl_slist_append(nil, "\(TunnelProxy.header): \(proxy.phone)")
            _ = convoy_easy_setopt_ptr(h, CURLOPT_PROXYHEADER, proxyHeaderList)
        }
        switch request.method {
        case "GET": _ = convoy_easy_setopt_long(h, CURLOPT_HTTPGET, 1)
        case "HEAD": _ = convoy_easy_setopt_long(h, CURLOPT_NOBODY, 1)
        default: ok = ok && convoy_easy_setopt_ptr(h, CURLOPT_CUSTOMREQUEST, request.method) == CURLE_OK
        }
        let body = request.body ?? (["POST", "PUT", "PATCH"].contains(request.method) ? [] : nil)
        if let body {
            _ = convoy_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            ok = ok && body.withUnsafeBytes { convoy_easy_setopt_ptr(h, CURLOPT_COPYPOSTFIELDS, $0.baseAddress ?? UnsafeRawPointer(errorBuffer)) } == CURLE_OK
        }
        // No `Expect: 100-continue` round trip before a body.
        for line in request.headers.map({ "\($0.name): \($0.value)" }) + ["Expect:"] {
            headerList = curl_slist_append(headerList, line)
        }
        _ = convoy_easy_setopt_ptr(h, CURLOPT_HTTPHEADER, headerList)
        guard ok else {
            finish(.failure(.invalidRequest("libcurl refused the request for \(request.url)")))
            return nil
        }
        return h
    }

    /// Resumes the awaiting task and frees the handle, on the engine thread
    /// (the handle may use a device's shared connection cache).
    func finish(_ result: Result<HTTPResponse, WireError>) {
        if let easy { curl_easy_cleanup(easy) }
        easy = nil
        curl_slist_free_all(headerList)
        headerList = nil
        curl_slist_free_all(proxyHeaderList)
        proxyHeaderList = nil
        continuation?.resume(with: result.mapError { $0 as any Error })
        continuation = nil
    }

    func response() -> HTTPResponse {
        guard let h = easy else { return HTTPResponse(status: 0, headers: [:], body: [], timing: .init(
            connect: 0, firstByte: 0, total: 0, newConnections: 0, httpVersion: "", bytesSent: 0, bytesReceived: 0)) }
        func seconds(_ info: CURLINFO) -> Double {
            var v: curl_off_t = 0
            _ = convoy_easy_getinfo_off(h, info, &v)
            return Double(v) / 1e6
        }
        func long(_ info: CURLINFO) -> Int {
            var v = 0
            _ = convoy_easy_getinfo_long(h, info, &v)
            return v
        }
        func off(_ info: CURLINFO) -> Int {
            var v: curl_off_t = 0
            _ = convoy_easy_getinfo_off(h, info, &v)
            return Int(v)
        }
        let version: String
        switch long(CURLINFO_HTTP_VERSION) {
        case Int(CURL_HTTP_VERSION_1_0): version = "1.0"
        case Int(CURL_HTTP_VERSION_1_1): version = "1.1"
        case Int(CURL_HTTP_VERSION_2_0): version = "2"
        case Int(CURL_HTTP_VERSION_3): version = "3"
        default: version = "?"
        }
        let timing = HTTPResponse.Timing(
            connect: seconds(CURLINFO_CONNECT_TIME_T), firstByte: seconds(CURLINFO_STARTTRANSFER_TIME_T), total: seconds(CURLINFO_TOTAL_TIME_T),
            newConnections: long(CURLINFO_NUM_CONNECTS), httpVersion: version,
            bytesSent: long(CURLINFO_REQUEST_SIZE) + off(CURLINFO_SIZE_UPLOAD_T),
            bytesReceived: long(CURLINFO_HEADER_SIZE) + off(CURLINFO_SIZE_DOWNLOAD_T))
        return HTTPResponse(status: long(CURLINFO_RESPONSE_CODE), headers: headers, body: body, timing: timing)
    }

    /// What a transfer that ended with `code` failed of.
    func failure(_ code: CURLcode) -> WireError {
        if tooLarge, let most = request.maxBodyBytes { return WireError.tooLarge(most) }
        return Self.error(code, errorBuffer)
    }

    static func error(_ code: CURLcode, _ buffer: UnsafeMutablePointer<CChar>) -> WireError {
        let detail = buffer.pointee == 0 ? String(cString: curl_easy_strerror(code)) : String(cString: buffer)
        let message = "\(detail) (libcurl error \(code.rawValue))"
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timeout(message)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_FUNCTION_ARGUMENT: return .invalidRequest(message)
        default: return .transport(message)
        }
    }

    private static let onBody: curl_write_callback = { data, size, count, user in
        guard let data, let user else { return 0 }
        let t = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
        let n = size * count
        if let most = t.request.maxBodyBytes, t.body.count + n > most {
            t.tooLarge = true
            return 0  // libcurl ends the transfer (CURLE_WRITE_ERROR)
        }
        data.withMemoryRebound(to: UInt8.self, capacity: n) { t.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
        return n
    }

    /// libcurl's progress: handed to the request's `progress`, never aborting the transfer.
    private static let onProgress: curl_xferinfo_callback = { user, downloadTotal, downloaded, uploadTotal, uploaded in
        guard let user else { return 0 }
        let t = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
        t.request.progress?(HTTPProgress(uploaded: Int(uploaded), uploadTotal: Int(uploadTotal),
                                         downloaded: Int(downloaded), downloadTotal: Int(downloadTotal)))
        return 0
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }

    private static let onHeader: curl_write_callback = { data, size, count, user in
        guard let data, let user else { return 0 }
        let t = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
        let n = size * count
        let line = data.withMemoryRebound(to: UInt8.self, capacity: n) { String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self) }
        if line.hasPrefix("HTTP/") {
            t.headers = [:]  // a new response (after 100 Continue or a redirect)
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            // Optional whitespace and the line's CRLF (RFC 9110 §5.6.3), trimmed on bytes: Foundation's
            // `trimmingCharacters(in:)` cost more than the rest of the header's handling.
            let value = line[line.index(after: colon)...].utf8.drop(while: Transfer.isSpace).reversed().drop(while: Transfer.isSpace).reversed()
            t.headers[name] = String(decoding: value, as: UTF8.self)
        }
        return n
    }
}
