import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Plain HTTP/1.1 (`http://`, no proxy) on SwiftNIO's event loops, for
/// `HTTPEngine`: NIO's HTTP/1.1 codecs on keep-alive connections, kept in a
/// shared pool and one pool per device (`HTTPConnection`), as libcurl's are.
/// A request and its response stay on the loop the caller runs on (a new
/// connection is opened there, an idle one there is preferred), where libcurl
/// costs two thread hops per request: to its event thread and back.
///
/// Like the libcurl path, at most `maxActive` requests are under way at once
/// (the rest wait their turn, in order), and the shared pool holds at most
/// `maxConnections` connections (0: no limit).
final class LoopHTTP: Sendable {
    struct Origin: Hashable, Sendable {
        var host: String
        var port: Int
    }

    enum PoolKey: Hashable, Sendable {
        case shared
        case device(ObjectIdentifier)
    }

    private let maxActive: Int
    private let maxConnections: Int
    private let state = Mutex(State())

    init(maxActive: Int, maxConnections: Int) {
        self.maxActive = max(1, maxActive)
        self.maxConnections = max(0, maxConnections)
    }

    /// Requests under way, and requests waiting their turn.
    var load: (active: Int, waiting: Int) { state.withLock { ($0.active, $0.waiting.count) } }

    // MARK: - Sending

    /// Sends `request` to `target` on a connection of `pool`. A reused
    /// connection the server had closed before answering (its keep-alive
    /// timed out) is tried once more on another, as libcurl does.
    func send(_ request: HTTPRequest, to target: PlainHTTPTarget, pool: PoolKey) async throws(WireError) -> HTTPResponse {
        let head = Self.head(request, target)
        // At most a day, as on libcurl's path; an infinite or absurd timeout means that.
        let seconds = request.timeout.isFinite ? min(max(0.001, request.timeout), 86_400) : 86_400
        let timeout = TimeAmount.nanoseconds(Int64(seconds * 1e9))
        let ticket = Ticket()
        do {
            return try await withTaskCancellationHandler {
                try await exchange(request.body, head, target, pool, timeout, request.maxBodyBytes, ticket)
            } onCancel: {
                ticket.cancel(self)
            }
        } catch let error as WireError {
            throw error
        } catch {
            throw .cancelled
        }
    }

    private func exchange(_ body: [UInt8]?, _ head: HTTPRequestHead, _ target: PlainHTTPTarget, _ pool: PoolKey,
                          _ timeout: TimeAmount, _ maxBody: Int?, _ ticket: Ticket) async throws(WireError) -> HTTPResponse {
        var retried = false
        while true {
            let lease = try await acquire(pool, target.origin, ticket)
            let start = NIODeadline.now()
            let connection: LoopHTTPConnection
            var reused = false
            switch lease {
            case .reuse(let c):
                connection = c
                reused = true
            case .open(let replaced):
                replaced?.close()
                guard !ticket.isCancelled else {
                    release(nil, pool, reusable: false)
                    throw .cancelled
                }
                do {
                    connection = try await LoopHTTPConnection.open(target.origin, on: Self.loop(), timeout: timeout) { [weak self] c in
                        self?.closedWhileIdle(c, pool)
                    }
                } catch {
                    release(nil, pool, reusable: false)
                    throw Self.connectError(error, target, timeout)
                }
            }
            guard ticket.begin(connection) else {
                release(connection, pool, reusable: true)
                throw .cancelled
            }
            let loop = connection.channel.eventLoop
            let promise = loop.makePromise(of: LoopHTTPReply.self)
            // The whole exchange within the request's timeout, connecting included.
            let left = max(.milliseconds(1), timeout - (NIODeadline.now() - start))
            if loop.inEventLoop {
                connection.exchange.value.send(head, body: body, timeout: left, maxBody: maxBody, promise: promise)
            } else {
                loop.execute { connection.exchange.value.send(head, body: body, timeout: left, maxBody: maxBody, promise: promise) }
            }
            do {
                let reply = try await promise.futureResult.get()
                ticket.end()
                release(connection, pool, reusable: reply.reusable)
                return Self.response(reply, start: start, connected: reused ? nil : start)
            } catch {
                ticket.end()
                release(connection, pool, reusable: false)
                if case .closed(early: true)? = error as? LoopHTTPFailure, reused, !retried {
                    retried = true
                    continue
                }
                throw Self.exchangeError(error, timeout)
            }
        }
    }

    /// Stops: waiting requests and those under way fail with `.shutdown`, idle connections close.
    func shutdown() {
        let (waiters, idle, busy) = state.withLock { s in
            s.stopped = true
            defer { s.waiting.removeAll(); s.pools = [:] }
            return (Array(s.waiting), s.pools.values.flatMap(\.idle), Array(s.busy.values))
        }
        for w in waiters { w.continuation.resume(returning: .failure(.shutdown)) }
        for c in idle { c.close() }
        for c in busy { c.channel.eventLoop.execute { c.exchange.value.fail(.shutdown) } }
    }

    /// A device is gone: its idle connections close.
    func drop(_ pool: PoolKey) {
        let idle = state.withLock { $0.pools.removeValue(forKey: pool)?.idle ?? [] }
        for c in idle { c.close() }
    }

    // MARK: - The pools

    private struct State {
        var active = 0
        var waiting = CircularBuffer<Waiter>()
        var pools: [PoolKey: Pool] = [:]
        /// Connections carrying a request, by identity: closed at shutdown.
        var busy: [ObjectIdentifier: LoopHTTPConnection] = [:]
        var stopped = false
        var nextWaiter = 0
    }

    private struct Pool {
        var idle: [LoopHTTPConnection] = []
        /// Open or opening, idle or not.
        var open = 0
    }

    private struct Waiter {
        let id: Int
        let pool: PoolKey
        let origin: Origin
        let continuation: UnsafeContinuation<Result<Lease, WireError>, Never>
    }

    enum Lease {
        case reuse(LoopHTTPConnection)
        /// Open a new connection; `replacing`: an idle one to another origin, closed to make room.
        case open(replacing: LoopHTTPConnection?)
    }

    private func acquire(_ pool: PoolKey, _ origin: Origin, _ ticket: Ticket) async throws(WireError) -> Lease {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop
        let now: Result<Lease, WireError>? = state.withLock { s in
            if s.stopped { return .failure(.shutdown) }
            if s.waiting.isEmpty, let lease = grant(&s, pool, origin, on: loop) { return .success(lease) }
            return nil
        }
        if let now { return try now.get() }
        let result = await withUnsafeContinuation { (c: UnsafeContinuation<Result<Lease, WireError>, Never>) in
            let refused = state.withLock { s -> WireError? in
                if s.stopped { return .shutdown }
                s.nextWaiter += 1
                guard ticket.waiting(s.nextWaiter) else { return .cancelled }
                s.waiting.append(Waiter(id: s.nextWaiter, pool: pool, origin: origin, continuation: c))
                return nil
            }
            if let refused { c.resume(returning: .failure(refused)) }
            // A slot freed between the first look and the queueing is handed out now.
            dispatch()
        }
        return try result.get()
    }

    /// A lease for a request now, if the bounds allow one.
    private func grant(_ s: inout State, _ key: PoolKey, _ origin: Origin, on loop: (any EventLoop)?) -> Lease? {
        guard s.active < maxActive else { return nil }
        // Taken out while it changes, so that its idle list is not copied (it would be, shared with the dictionary).
        var pool = s.pools.removeValue(forKey: key) ?? Pool()
        defer { s.pools[key] = pool }
        let here = loop.flatMap { l in pool.idle.lastIndex { $0.origin == origin && $0.channel.eventLoop === l } }
        if let i = here ?? pool.idle.lastIndex(where: { $0.origin == origin }) {
            let c = pool.idle.remove(at: i)
            s.active += 1
            s.busy[ObjectIdentifier(c)] = c
            return .reuse(c)
        }
        let cap = key == .shared ? maxConnections : 0
        if cap == 0 || pool.open < cap {
            pool.open += 1
            s.active += 1
            return .open(replacing: nil)
        }
        guard !pool.idle.isEmpty else { return nil }
        s.active += 1
        return .open(replacing: pool.idle.removeFirst())
    }

    /// Leases to the waiting requests the bounds now allow, in order.
    private func dispatch() {
        let granted = state.withLock { s -> [(Waiter, Lease)] in
            var out: [(Waiter, Lease)] = []
            while let w = s.waiting.first, let lease = grant(&s, w.pool, w.origin, on: nil) {
                s.waiting.removeFirst()
                out.append((w, lease))
            }
            return out
        }
        for (w, lease) in granted { w.continuation.resume(returning: .success(lease)) }
    }

    /// A request is done with its connection (nil: none was opened).
    private func release(_ connection: LoopHTTPConnection?, _ key: PoolKey, reusable: Bool) {
        let close = state.withLock { s -> Bool in
            s.active -= 1
            if let connection { s.busy[ObjectIdentifier(connection)] = nil }
            if reusable, let connection, !s.stopped, s.pools[key] != nil {
                s.pools[key]!.idle.append(connection)
                return false
            }
            s.pools[key]?.open -= 1
            return true
        }
        if close { connection?.close() }
        dispatch()
    }

    /// An idle connection closed (the server's keep-alive ended): it leaves its pool.
    private func closedWhileIdle(_ connection: LoopHTTPConnection, _ key: PoolKey) {
        let left = state.withLock { s -> Bool in
            guard let i = s.pools[key]?.idle.firstIndex(where: { $0 === connection }) else { return false }
            s.pools[key]!.idle.remove(at: i)
            s.pools[key]!.open -= 1
            return true
        }
        if left { dispatch() }
    }

    /// Gives up a waiting request (its task was cancelled).
    fileprivate func abandon(waiter id: Int) {
        let found = state.withLock { s -> Waiter? in
            guard let i = s.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            return s.waiting.remove(at: i)
        }
        found?.continuation.resume(returning: .failure(.cancelled))
    }

    // MARK: - Cancellation

    /// Where a request is, for its task's cancellation: waiting its turn, or on a connection.
    private final class Ticket: Sendable {
        private struct Where {
            var cancelled = false
            var waiter: Int?
            var connection: LoopHTTPConnection?
        }
        private let place = Mutex(Where())

        /// False when the task was cancelled already (then it does not wait).
        func waiting(_ id: Int) -> Bool {
            place.withLock { p in
                guard !p.cancelled else { return false }
                p.waiter = id
                return true
            }
        }

        var isCancelled: Bool { place.withLock { $0.cancelled } }

        /// False when the task was cancelled already.
        func begin(_ connection: LoopHTTPConnection) -> Bool {
            place.withLock { p in
                p.waiter = nil
                guard !p.cancelled else { return false }
                p.connection = connection
                return true
            }
        }

        func end() { place.withLock { $0.connection = nil } }

        func cancel(_ http: LoopHTTP) {
            let (waiter, connection) = place.withLock { p in
                p.cancelled = true
                return (p.waiter, p.connection)
            }
            if let waiter { http.abandon(waiter: waiter) }
            if let connection { connection.channel.eventLoop.execute { connection.exchange.value.fail(.cancelled) } }
        }
    }

    // MARK: - Requests and responses

    private static func loop() -> any EventLoop {
        MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
    }

    /// The request's head: its own headers in order, `Host`, and the body's length.
    static func head(_ request: HTTPRequest, _ target: PlainHTTPTarget) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headers.count + 3)
        headers.add(name: "Host", value: target.hostHeader)
        for (name, value) in request.headers { headers.add(name: name, value: value) }
        if !headers.contains(name: "Accept") { headers.add(name: "Accept", value: "*/*") }
        if let body = request.body ?? (["POST", "PUT", "PATCH"].contains(request.method) ? [] : nil) {
            headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        }
        return HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method), uri: target.uri, headers: headers)
    }

    static func response(_ reply: LoopHTTPReply, start: NIODeadline, connected: NIODeadline?) -> HTTPResponse {
        let end = NIODeadline.now()
        func seconds(_ t: NIODeadline) -> Double { Double((t - start).nanoseconds) / 1e9 }
        var headers: [String: String] = [:]
        headers.reserveCapacity(reply.head.headers.count)
        for (name, value) in reply.head.headers { headers[name.lowercased()] = value }
        let version = reply.head.version
        let timing = HTTPResponse.Timing(
            connect: connected.map(seconds) ?? 0, firstByte: seconds(reply.firstByte), total: seconds(end),
            newConnections: connected == nil ? 0 : 1, httpVersion: "\(version.major).\(version.minor)",
            bytesSent: reply.bytesSent, bytesReceived: reply.bytesReceived)
        return HTTPResponse(status: Int(reply.head.status.code), headers: headers, body: reply.body, timing: timing)
    }

    static func connectError(_ error: any Error, _ target: PlainHTTPTarget, _ timeout: TimeAmount) -> WireError {
        if let e = error as? ChannelError, case .connectTimeout = e {
            return .timeout("Connection to \(target.origin.host) port \(target.origin.port) timed out after \(timeout.nanoseconds / 1_000_000) milliseconds")
        }
        return .transport("Failed to connect to \(target.origin.host) port \(target.origin.port): \(error)")
    }

    static func exchangeError(_ error: any Error, _ timeout: TimeAmount) -> WireError {
        switch error as? LoopHTTPFailure {
        case .timeout: return .timeout("Operation timed out after \(timeout.nanoseconds / 1_000_000) milliseconds")
        case .cancelled: return .cancelled
        case .shutdown: return .shutdown
        case .closed: return .transport("the server closed the connection before the response ended")
        case .tooLarge(let most): return .tooLarge(most)
        case .failed(let e): return .transport("HTTP/1.1: \(e)")
        case nil: return .transport("HTTP/1.1: \(error)")
        }
    }
}

/// An `http://` URL as `LoopHTTP` sends it: host, port, and the path with its query.
struct PlainHTTPTarget: Sendable {
    var origin: LoopHTTP.Origin
    var uri: String
    var hostHeader: String

    /// Nil unless `url` is `http://HOST[:PORT][/PATH][?QUERY]` with nothing libcurl would have to interpret
    /// (user info, a fragment, spaces): those go to libcurl.
    init?(_ url: String) {
        let utf8 = url.utf8
        guard utf8.count > 7, url.hasPrefix("http://") else { return nil }
        let rest = url.dropFirst(7)
        guard !rest.contains(where: { $0 == "@" || $0 == "#" || $0 == " " || $0 == "\\" || !$0.isASCII || $0.isNewline }) else { return nil }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var host = Substring(authority), port = 80
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let p = Int(after.dropFirst()) else { return nil }
                port = p
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            guard let p = Int(authority[authority.index(after: colon)...]) else { return nil }
            port = p
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        let path = rest[authorityEnd...]
        uri = path.isEmpty ? "/" : (path.hasPrefix("?") ? "/" + path : String(path))
        origin = LoopHTTP.Origin(host: String(host), port: port)
        let bracketed = host.contains(":") ? "[\(host)]" : String(host)
        hostHeader = port == 80 ? bracketed : "\(bracketed):\(port)"
    }
}
