internal import CCurl
import Foundation
import Synchronization

/// HTTP for thousands of virtual devices on libcurl's multi interface: one
/// event thread drives every transfer (`curl_multi_perform` and
/// `curl_multi_poll`), and `send` bridges each to async/await. HTTP/1.1 with
/// keep-alive, HTTP/2 over TLS when the server offers it, TLS verification on.
///
/// Connections: a request sent on an `HTTPConnection` uses that connection's
/// own connection cache, so each virtual device holds its own connection as a
/// phone does; a request sent without one uses the engine's shared pool.
public final class HTTPEngine: Sendable {
    private let multi: Handle
    /// Transfers inside libcurl at once; the rest wait in order on the engine thread.
    private let maxActive: Int
    private let activeCount = Atomic(0)
    private let waitingCount = Atomic(0)

    /// Transfers inside libcurl, and transfers waiting their turn (as of the engine's last round).
    public var load: (active: Int, waiting: Int) {
        (activeCount.load(ordering: .relaxed), waitingCount.load(ordering: .relaxed))
    }
    private let inbox = Mutex(Inbox())

    private struct Inbox {
        var commands: [Command] = []
        var stopping = false
        /// Set by the event thread just before it frees the multi handle: from
        /// then on nothing may wake it.
        var closed = false
        /// Device connection caches not yet freed: the event thread frees those
        /// still here when it stops.
        var shares: Set<Handle> = []
    }

    private enum Command {
        case add(Transfer)
        case cancel(Transfer)
        case release(Handle)
    }

    /// A libcurl handle, used only on the engine thread (or before it starts).
    struct Handle: @unchecked Sendable, Hashable { let pointer: UnsafeMutableRawPointer }

    /// `maxConnections` (0: no limit) caps the open connections of the shared
    /// pool: beyond it transfers queue inside libcurl instead of each opening a
    /// connection, so a backlog against a slow server cannot run the process
    /// out of file descriptors (nor make every `curl_multi_perform` walk
    /// thousands of half-open connections).
    ///
    /// At most `maxActive` transfers are inside libcurl at once; later ones wait
    /// their turn in a queue of the engine's own. Against a backend that has
    /// fallen behind, libcurl's bookkeeping then stays proportional to that
    /// bound instead of to the backlog (removing a handle from a multi with
    /// thousands in it costs time in proportion to them).
    public init(maxConnections: Int = 0, maxActive: Int = 1024) throws(WireError) {
        self.maxActive = max(1, maxActive)
        try Curl.ensureReady()
        guard let m = curl_multi_init() else { throw .libraryUnavailable("curl_multi_init failed") }
        multi = Handle(pointer: m)
        // HTTP/2: several streams over one connection when the server allows it.
        _ = convoy_multi_setopt_long(m, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        if maxConnections > 0 {
            _ = convoy_multi_setopt_long(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxConnections)
            _ = convoy_multi_setopt_long(m, CURLMOPT_MAXCONNECTS, maxConnections)
        }
        // The thread holds the engine until `shutdown`.
        let t = Thread { [self] in loop() }
        t.name = "convoy-http"
        t.start()
    }

    /// Stops the event thread; transfers still running fail with `.shutdown`.
    /// Calling it again does nothing.
    public func shutdown() {
        inbox.withLock { box in
            guard !box.stopping else { return }
            box.stopping = true
            curl_multi_wakeup(multi.pointer)
        }
    }

    /// Sends `request` and waits for its response. Cancelling the awaiting task
    /// aborts the transfer.
    public func send(_ request: HTTPRequest, on connection: HTTPConnection? = nil) async throws(WireError) -> HTTPResponse {
        let transfer = Transfer(request: request, connection: connection)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (c: CheckedContinuation<HTTPResponse, any Error>) in
                    transfer.continuation = c
                    post(.add(transfer))
                }
            } onCancel: {
                transfer.cancelRequested.store(true, ordering: .relaxed)
                post(.cancel(transfer))
            }
        } catch let error as WireError {
            throw error
        } catch {
            throw .cancelled
        }
    }

    /// Queues a command and wakes the event thread (under the lock, so never
    /// after the thread has freed the multi handle).
    private func post(_ command: Command) {
        let accepted = inbox.withLock { box -> Bool in
            guard !box.stopping else { return false }
            box.commands.append(command)
            curl_multi_wakeup(multi.pointer)
            return true
        }
        if !accepted, case .add(let t) = command {
            t.continuation?.resume(throwing: WireError.shutdown)
            t.continuation = nil
        }
    }

    func register(_ share: Handle) -> Bool {
        inbox.withLock { box in
            guard !box.stopping else { return false }
            box.shares.insert(share)
            return true
        }
    }

    /// Frees a device's connection cache on the event thread (or, once the
    /// engine has stopped, it was freed already).
    func release(_ share: Handle) { post(.release(share)) }

    // MARK: - The event thread

    private func loop() {
        var active: [UnsafeMutableRawPointer: Transfer] = [:]
        var waiting: [Transfer] = []
        var nextWaiting = 0
        var running: Int32 = 0
        while true {
            let (commands, stopping) = inbox.withLock { box -> ([Command], Bool) in
                defer { box.commands.removeAll(keepingCapacity: true) }
                return (box.commands, box.stopping)
            }
            for command in commands {
                switch command {
                case .add(let t):
                    if t.cancelRequested.load(ordering: .relaxed) {
                        t.finish(.failure(.cancelled))
                    } else {
                        waiting.append(t)
                    }
                case .cancel(let t):
                    if let easy = t.easy, active.removeValue(forKey: easy) != nil {
                        curl_multi_remove_handle(multi.pointer, easy)
                        t.finish(.failure(.cancelled))
                    } else if t.easy == nil {
                        // Still waiting its turn: it ends now, and is skipped when its turn comes.
                        t.finish(.failure(.cancelled))
                    }
                case .release(let share):
                    if inbox.withLock({ $0.shares.remove(share) }) != nil { curl_share_cleanup(share.pointer) }
                }
            }
            if stopping {
                for t in waiting[nextWaiting...] { t.finish(.failure(.shutdown)) }
                for (easy, t) in active {
                    curl_multi_remove_handle(multi.pointer, easy)
                    t.finish(.failure(.shutdown))
                }
                let shares = inbox.withLock { box -> Set<Handle> in
                    box.closed = true
                    defer { box.shares = [] }
                    return box.shares
                }
                for share in shares { curl_share_cleanup(share.pointer) }
                curl_multi_cleanup(multi.pointer)
                return
            }
            // Let waiting transfers in, in order, up to the bound.
            while active.count < maxActive, nextWaiting < waiting.count {
                let t = waiting[nextWaiting]
                nextWaiting += 1
                guard t.continuation != nil else { continue }  // cancelled while it waited
                if let easy = t.start() {
                    if curl_multi_add_handle(multi.pointer, easy) == CURLM_OK {
                        active[easy] = t
                    } else {
                        t.finish(.failure(.invalidRequest("curl_multi_add_handle refused the transfer")))
                    }
                }
            }
            if nextWaiting == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                nextWaiting = 0
            } else if nextWaiting > 4096, nextWaiting * 2 > waiting.count {
                waiting.removeFirst(nextWaiting)
                nextWaiting = 0
            }
            curl_multi_perform(multi.pointer, &running)
            activeCount.store(active.count, ordering: .relaxed)
            waitingCount.store(waiting.count - nextWaiting, ordering: .relaxed)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi.pointer, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                      let t = active.removeValue(forKey: easy)
                else { continue }
                let code = convoy_msg_result(message)
                curl_multi_remove_handle(multi.pointer, easy)
                t.finish(code == CURLE_OK ? .success(t.response()) : .failure(Transfer.error(code, t.errorBuffer)))
            }
            // Slots freed and transfers waiting: go round at once rather than sleep in poll.
            if active.count < maxActive, nextWaiting < waiting.count { continue }
            curl_multi_poll(multi.pointer, nil, 0, 1000, nil)
        }
    }
}

/// One transfer's state. Touched by the engine thread only, except
/// `continuation` (set before the transfer is posted) and `cancelRequested`.
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
        if request.body != nil, ["GET", "HEAD"].contains(request.method) {
            finish(.failure(.invalidRequest("a \(request.method) request has no body")))
            return nil
        }
        if request.headers.contains(where: { ($0.name + $0.value).contains(where: { $0 == "\r" || $0 == "\n" }) }) {
            finish(.failure(.invalidRequest("a header name or value holds a line break")))
            return nil
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
        data.withMemoryRebound(to: UInt8.self, capacity: n) { t.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
        return n
    }

    private static let onHeader: curl_write_callback = { data, size, count, user in
        guard let data, let user else { return 0 }
        let t = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
        let n = size * count
        let line = data.withMemoryRebound(to: UInt8.self, capacity: n) { String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self) }
        if line.hasPrefix("HTTP/") {
            t.headers = [:]  // a new response (after 100 Continue or a redirect)
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            t.headers[name] = value
        }
        return n
    }
}
