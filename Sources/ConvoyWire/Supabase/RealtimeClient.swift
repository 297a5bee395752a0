import Foundation
import Logging
import Synchronization
import HTTPTypes
import WSClient

/// Supabase Realtime over a websocket (Phoenix v1 JSON, vsn 1.0.0), as
/// realtime-js speaks it: `phx_join` with `postgres_changes` bindings and the
/// access token; a heartbeat every 25 s (a heartbeat still unanswered at the
/// next one drops the connection); reconnects after 1, 2, 5, then every 10 s,
/// rejoining every channel with the current token; `access_token` pushed to
/// joined channels when the token changes. Everything that happens arrives on
/// `events`.
public final class RealtimeClient: Sendable {
    /// A `postgres_changes` binding.
    public struct Binding: Sendable, Equatable {
        public var event: String
        public var table: String
        public var filter: String?
        public var schema: String

        public init(event: String = "INSERT", table: String, filter: String? = nil, schema: String = "public") {
            (self.event, self.table, self.filter, self.schema) = (event, table, filter, schema)
        }

        var json: [String: Any] {
            var o: [String: Any] = ["event": event, "schema": schema, "table": table]
            if let filter { o["filter"] = filter }
            return o
        }
    }

    /// A row change. `record` values are text (numbers and booleans as their JSON text).
    public struct Change: Sendable {
        public var type: String
        public var table: String
        public var commitTimestamp: String
        public var record: [String: String]
        /// When its message was read off the socket, on the client's clock (Unix seconds by default).
        public var receivedAt: Double
        /// The websocket message's size, bytes (for the battery model).
        public var bytes: Int = 0
    }

    public enum Event: Sendable {
        /// Connected; `attempt` 0 is the first connection, then reconnections.
        case connected(attempt: Int)
        case disconnected(reason: String)
        /// The channel's `postgres_changes` are live ("Subscribed to PostgreSQL"), or it joined without any.
        case subscribed(topic: String)
        case joinFailed(topic: String, reason: String)
        /// The server closed the channel (e.g. "Token has expired …"); join again with a fresh token.
        case channelClosed(topic: String, reason: String)
        case change(topic: String, Change)
        /// A heartbeat's reply, with its round trip in seconds.
        case heartbeat(roundTrip: Double)
    }

    public let events: AsyncStream<Event>
    private let sink: AsyncStream<Event>.Continuation
    private let url: String
    private let logger: Logger
    private let heartbeatWait: @Sendable () async throws -> Void
    private let backoffWait: @Sendable (Double) async throws -> Void
    private let clock: any ConvoyClock
    private let state: Mutex<State>
    /// The tunnel its connections go through (network conditions); nil: straight to the server.
    private let proxy: TunnelProxy?
    /// How long a connection may take to open before it is given up, seconds.
    private let openTimeout: Double

    /// realtime-js's reconnect delays, seconds; the last repeats.
    public static let backoff: [Double] = [1, 2, 5, 10]
    public static let heartbeatInterval = 25.0
    /// A server-to-client websocket frame's header, plus TCP/IP headers, bytes.
    public static let frameOverhead = 4 + 52

    private struct Channel {
        var bindings: [Binding]
        var joined = false
        var joinRef = ""
    }

    private struct State {
        var token: String
        var channels: [String: Channel] = [:]
        var outgoing: AsyncStream<String>.Continuation?
        var ref = 0
        var pendingHeartbeat: (ref: String, sent: Double)?

        mutating func nextRef() -> String {
            ref += 1
            return String(ref)
        }
    }

    /// `clock` stamps each change as it is read (its Unix time), times
    /// heartbeats' round trips, and waits `heartbeatInterval` between
    /// heartbeats and the backoff before a reconnection. Tests may replace
    /// those waits (`heartbeatWait`, `backoffWait`) to step them one by one.
    public init(url: String, accessToken: String, logger: Logger = Logger(label: "convoy.realtime"),
                clock: any ConvoyClock = SystemClock(), heartbeatInterval: Double = RealtimeClient.heartbeatInterval, proxy: TunnelProxy? = nil,
                openTimeout: Double = RealtimeClient.openTimeout,
                heartbeatWait: (@Sendable () async throws -> Void)? = nil,
                backoffWait: (@Sendable (Double) async throws -> Void)? = nil) {
        self.clock = clock
        self.proxy = proxy
        self.openTimeout = openTimeout
        (events, sink) = AsyncStream<Event>.makeStream()
        self.url = url
        self.logger = logger
        self.heartbeatWait = heartbeatWait ?? { try await clock.sleep(for: heartbeatInterval) }
        self.backoffWait = backoffWait ?? { try await clock.sleep(for: $0) }
        state = Mutex(State(token: accessToken))
    }

    deinit { sink.finish() }

    // MARK: - Channels

    /// Joins `topic` (`realtime:<name>`) with these bindings, now or on connecting.
    /// Frames are built and queued under one lock, so a frame made for one
    /// connection never goes out on the next.
    public func join(_ topic: String, bindings: [Binding]) {
        state.withLock { s in
            s.channels[topic] = Channel(bindings: bindings)
            if let out = s.outgoing { out.yield(Self.joinFrame(topic, &s)) }
        }
    }

    public func leave(_ topic: String) {
        state.withLock { s in
            guard s.channels.removeValue(forKey: topic) != nil else { return }
            s.outgoing?.yield(PhoenixFrame(topic: topic, event: PhoenixFrame.Event.leave, ref: s.nextRef()).text)
        }
    }

    /// A new access token: used for every later join, and pushed now to each joined channel.
    public func setAccessToken(_ token: String) {
        state.withLock { s in
            s.token = token
            for (topic, channel) in s.channels where channel.joined {
                s.outgoing?.yield(PhoenixFrame(topic: topic, event: PhoenixFrame.Event.accessToken, payload: ["access_token": token],
                                                   ref: s.nextRef(), joinRef: channel.joinRef).text)
            }
        }
    }

    // MARK: - The connection

    /// Connects and stays connected until cancelled; then `events` ends. Run it once.
    public func run() async {
        defer { sink.finish() }
        var attempt = 0, failures = 0
        let opened = Atomic(false)
        while !Task.isCancelled {
            var reason = "closed"
            opened.store(false, ordering: .relaxed)
            do {
                try await connection(attempt: attempt) { opened.store(true, ordering: .relaxed) }
            } catch {
                reason = "\(error)"
            }
            // realtime-js starts the backoff again after a connection that opened.
            if opened.load(ordering: .relaxed) { failures = 0 }
            state.withLock { s in
                s.outgoing?.finish()
                s.outgoing = nil
                s.pendingHeartbeat = nil
                for key in s.channels.keys { s.channels[key]?.joined = false }
            }
            if Task.isCancelled { break }
            sink.yield(.disconnected(reason: reason))
            do {
                try await backoffWait(Self.backoff[min(failures, Self.backoff.count - 1)])
            } catch {
                break
            }
            failures += 1
            attempt += 1
        }
    }

    private func connection(attempt: Int, opened: @escaping @Sendable () -> Void) async throws {
        let (outgoing, continuation) = AsyncStream<String>.makeStream()
        let handler: WebSocketDataHandler<WebSocketClient.Context> = { inbound, outbound, _ in
            opened()
            self.sink.yield(.connected(attempt: attempt))
            self.state.withLock { s in
                s.outgoing = continuation
                for topic in s.channels.keys.sorted() { continuation.yield(Self.joinFrame(topic, &s)) }
            }
            // The first child to end (the server closed, or a heartbeat went unanswered) ends the connection.
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await text in outgoing { try await outbound.write(.text(text)) }
                }
                group.addTask {
                    while true {
                        try await self.heartbeatWait()
                        // Phoenix: a heartbeat still unanswered at the next one means the connection is dead.
                        let frame = self.state.withLock { s -> String? in
                            if s.pendingHeartbeat != nil { return nil }
                            let ref = s.nextRef()
                            s.pendingHeartbeat = (ref, self.clock.now())
                            return PhoenixFrame.heartbeat(ref: ref).text
                        }
                        guard let frame else { throw HeartbeatTimeout() }
                        continuation.yield(frame)
                    }
                }
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { self.receive(text) }
                    }
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        }
        let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20)
        let proxy = self.proxy
        let logger = self.logger
        let url = self.url
        let outcome = Outcome()
        let opening: WebSocketDataHandler<WebSocketClient.Context> = { inbound, outbound, context in
            // An attempt given up before it opened stays given up: it must not become a second connection.
            guard outcome.markOpen() else { return }
            try await handler(inbound, outbound, context)
        }
        let connect: @Sendable () async throws -> Void = {
            if let proxy {
                try await WebSocketClient.connect(url: url, configuration: configuration,
                                                  proxySettings: .init(host: proxy.host, port: proxy.port,
                                                                       type: .http(connectHeaders: [HTTPField.Name(TunnelProxy.header)!: String(proxy.phone)])),
                                                  logger: logger, handler: opening)
            } else {
                try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger, handler: opening)
            }
        }
        // A connection that is not open (upgraded) within `openTimeout` is given up, as a browser gives up a
        // websocket whose handshake stalls. NIO's client upgrade handler never fails its promise when the
        // connection closes mid-upgrade, nor when the server never answers, and awaiting it ignores
        // cancellation: so the attempt runs in a task of its own that is cancelled and left behind (a few
        // objects, its socket already closed or closed by the server in time) rather than awaited for ever.
        let work = Task {
            do {
                try await connect()
                outcome.resume(.success(()))
            } catch {
                outcome.resume(.failure(error))
            }
        }
        let timer = Task { [clock, openTimeout] in
            try? await clock.sleep(for: openTimeout)
            if !Task.isCancelled, outcome.resume(.failure(OpenTimeout()), unlessOpen: true) { work.cancel() }
        }
        defer { timer.cancel() }
        try await withTaskCancellationHandler {
            try await outcome.wait()
        } onCancel: {
            work.cancel()
            outcome.resume(.failure(CancellationError()))
        }
    }

    /// The first result of an attempt, whichever comes first: the connection's end, the open timeout, cancellation.
    private final class Outcome: Sendable {
        private struct State {
            var result: Result<Void, any Error>?
            var waiter: CheckedContinuation<Void, any Error>?
            var open = false
        }

        private let state = Mutex(State())

        /// The connection opened; false when the attempt was already given up.
        func markOpen() -> Bool {
            state.withLock { s in
                guard s.result == nil else { return false }
                s.open = true
                return true
            }
        }

        /// The attempt's result, if it is the first; with `unlessOpen`, only if it has not opened. True when taken.
        @discardableResult
        func resume(_ result: Result<Void, any Error>, unlessOpen: Bool = false) -> Bool {
            let (taken, waiter) = state.withLock { s -> (Bool, CheckedContinuation<Void, any Error>?) in
                guard s.result == nil, !(unlessOpen && s.open) else { return (false, nil) }
                s.result = result
                defer { s.waiter = nil }
                return (true, s.waiter)
            }
            waiter?.resume(with: result)
            return taken
        }

        func wait() async throws {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { s -> Result<Void, any Error>? in
                    if let r = s.result { return r }
                    s.waiter = c
                    return nil
                }
                if let ready { c.resume(with: ready) }
            }
        }
    }

    /// How long a connection may take to open (TCP, TLS and the websocket upgrade) by default, seconds.
    public static let openTimeout = 20.0

    struct OpenTimeout: Error, CustomStringConvertible {
        var description: String { "the websocket did not open in time" }
    }

    struct HeartbeatTimeout: Error, CustomStringConvertible {
        var description: String { "heartbeat timeout" }
    }

    private func receive(_ text: String) {
        let receivedAt = clock.wallNow()
        guard let frame = PhoenixFrame(text: text) else { return }
        let topic = frame.topic
        typealias Event = PhoenixFrame.Event
        switch frame.event {
        case Event.postgresChanges:
            guard let change = frame.change else { return }
            sink.yield(.change(topic: topic, Change(type: change.type, table: change.table, commitTimestamp: change.commitTimestamp,
                                                    record: change.record.compactMapValues(Self.text),
                                                    receivedAt: receivedAt, bytes: text.utf8.count + Self.frameOverhead)))
        case Event.reply:
            let ref = frame.ref
            if topic == PhoenixFrame.heartbeatTopic {
                let sent = state.withLock { s -> Double? in
                    guard let p = s.pendingHeartbeat, p.ref == ref else { return nil }
                    s.pendingHeartbeat = nil
                    return p.sent
                }
                if let sent { sink.yield(.heartbeat(roundTrip: clock.now() - sent)) }
                return
            }
            let isJoin = state.withLock { s in s.channels[topic].map { $0.joinRef == ref } ?? false }
            guard isJoin else { return }
            let response = frame.response
            if frame.status == "ok" {
                let withChanges = !((response["postgres_changes"] as? [Any]) ?? []).isEmpty
                state.withLock { $0.channels[topic]?.joined = true }
                if !withChanges { sink.yield(.subscribed(topic: topic)) }
            } else {
                sink.yield(.joinFailed(topic: topic, reason: response["reason"] as? String ?? "join refused"))
            }
        case Event.system:
            let message = frame.message ?? ""
            if frame.status == "ok", message == PhoenixFrame.subscribedMessage {
                sink.yield(.subscribed(topic: topic))
            } else if frame.status == "error" {
                // e.g. "Token has expired …", followed by phx_close: one event for both.
                state.withLock { $0.channels[topic]?.joined = false }
                sink.yield(.channelClosed(topic: topic, reason: message))
            }
        case Event.close, Event.error:
            // A channel the server closed (or that crashed) while joined: the caller must join again.
            let known = state.withLock { s -> Bool in
                guard s.channels[topic]?.joined == true else { return false }
                s.channels[topic]?.joined = false
                return true
            }
            if known { sink.yield(.channelClosed(topic: topic, reason: frame.event == Event.error ? Event.error : "closed by the server")) }
        default:
            break
        }
    }

    // MARK: - Frames

    private static func joinFrame(_ topic: String, _ s: inout State) -> String {
        let ref = s.nextRef()
        s.channels[topic]?.joinRef = ref
        let bindings = s.channels[topic]?.bindings.map(\.json) ?? []
        let config: [String: Any] = ["broadcast": ["ack": false, "self": false], "presence": ["key": ""],
                                     "postgres_changes": bindings, "private": false]
        return PhoenixFrame.join(topic, config: config, accessToken: s.token, ref: ref).text
    }

    private static func text(_ value: Any) -> String? {
        switch value {
        case let s as String: return s
        case is NSNull: return nil
        case let n as NSNumber:
            return String(cString: n.objCType) == "c" ? (n.boolValue ? "true" : "false") : n.stringValue
        default:
            return (try? JSONSerialization.data(withJSONObject: value)).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
