internal import CCurl
import Foundation
import Synchronization

/// HTTP for thousands of virtual devices on libcurl's multi interface: one
/// event thread drives every transfer (`curl_multi_perform` and
/// `curl_multi_poll`), and `send` bridges each to async/await. HTTP/1.1 with
/// keep-alive, HTTP/2 over TLS when the server offers it, TLS verification on.
///
/// Plain `http://` requests without a proxy or a progress callback go, unless
/// `plainHTTPOnLoops` is off, to `LoopHTTP` instead: NIO's HTTP/1.1 codecs on
/// the event loops the devices run on, with the same pools and bounds, and no
/// hop to libcurl's thread and back for each request.
///
/// Connections: a request sent on an `HTTPConnection` uses that connection's
/// own connection cache, so each virtual device holds its own connection as a
/// phone does; a request sent without one uses the engine's shared pool.
public final class HTTPEngine: Sendable {
    private let multi: Handle
    /// Plain HTTP on NIO's loops; nil: everything through libcurl.
    private let loops: LoopHTTP?
    /// Transfers inside libcurl at once; the rest wait in order on the engine thread.
    private let maxActive: Int
    private let activeCount = Atomic(0)
    private let waitingCount = Atomic(0)

    /// Transfers inside libcurl, and transfers waiting their turn (as of the engine's last round).
    public var load: (active: Int, waiting: Int) {
        let plain = loops?.load ?? (active: 0, waiting: 0)
        return (activeCount.load(ordering: .relaxed) + plain.active, waitingCount.load(ordering: .relaxed) + plain.waiting)
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

    /// A libcurl handle, used only on the engine thread (or before it starts). `@unchecked` because it is a raw
    /// pointer: it reaches the engine thread only in a `Command`, through the Mutex-guarded queue, which orders the
    /// hand-over (`HTTPEngineTests` on the libcurl path, under `make test-tsan`).
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
    ///
    /// `plainHTTPOnLoops` false sends plain HTTP through libcurl too (`convoy
    /// run` does so when `CONVOY_HTTP=curl` is set, for comparison).
    public init(maxConnections: Int = 0, maxActive: Int = 1024, plainHTTPOnLoops: Bool = true) throws(WireError) {
        self.maxActive = max(1, maxActive)
        loops = plainHTTPOnLoops ? LoopHTTP(maxActive: maxActive, maxConnections: maxConnections) : nil
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
        loops?.shutdown()
    }

    /// Sends `request` and waits for its response. Cancelling the awaiting task
    /// aborts the transfer.
    public func send(_ request: HTTPRequest, on connection: HTTPConnection? = nil) async throws(WireError) -> HTTPResponse {
        try Self.validate(request)
        if let loops, request.progress == nil, connection?.proxy == nil, let target = PlainHTTPTarget(request.url) {
            return try await loops.send(request, to: target, pool: connection.map { .device(ObjectIdentifier($0)) } ?? .shared)
        }
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
    /// engine has stopped, it was freed already), and closes its idle plain-HTTP connections.
    func release(_ share: Handle, of connection: ObjectIdentifier) {
        post(.release(share))
        loops?.drop(.device(connection))
    }

    /// What neither path may send, refused before either sees it: a body on a
    /// GET or HEAD, a line break in a header (it would start another), and a
    /// method that is not an HTTP token (both write it into the request line as given).
    static func validate(_ request: HTTPRequest) throws(WireError) {
        if request.body != nil, request.method == "GET" || request.method == "HEAD" {
            throw .invalidRequest("a \(request.method) request has no body")
        }
        func breaks(_ text: String) -> Bool { text.utf8.contains { $0 == 0x0D || $0 == 0x0A } }
        if request.headers.contains(where: { breaks($0.name) || breaks($0.value) }) {
            throw .invalidRequest("a header name or value holds a line break")
        }
        if request.method.isEmpty || !request.method.utf8.allSatisfy(Self.isTokenByte) {
            throw .invalidRequest("not an HTTP method: \(request.method)")
        }
    }

    /// RFC 9110 §5.6.2's `tchar`.
    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }

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
                t.finish(code == CURLE_OK ? .success(t.response()) : .failure(t.failure(code)))
            }
            // Slots freed and transfers waiting: go round at once rather than sleep in poll.
            if active.count < maxActive, nextWaiting < waiting.count { continue }
            curl_multi_poll(multi.pointer, nil, 0, 1000, nil)
        }
    }
}
