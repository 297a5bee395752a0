import ConvoyFormats
import ConvoyJSON
import ConvoyTime
import Foundation
import NIOCore
import Synchronization

/// Supabase Realtime over a websocket (Phoenix v1 JSON, vsn 1.0.0), as
/// realtime-js speaks it: `phx_join` with `postgres_changes` bindings and the
/// access token; a heartbeat every 25 s, on a 100 ms grid (a heartbeat still
/// unanswered at the next one drops the connection); reconnects after 1, 2, 5, then every 10 s,
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

        var json: JSONValue {
            var o: [JSONValue.Member] = [.init("event", .string(event))]
            if let filter { o.append(.init("filter", .string(filter))) }
            o += [.init("schema", .string(schema)), .init("table", .string(table))]
            return .object(o)
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
        /// A broadcast on a joined channel.
        case broadcast(topic: String, Broadcast)
        /// The channel's presence: its whole state after a join, then each change.
        case presence(topic: String, PresenceEvent)
        /// The server's reply to a broadcast (with `ack`) or a presence push: `ref` as `broadcast`, `track`
        /// or `untrack` returned it, `status` ok or error.
        case pushReply(topic: String, ref: String, status: String, reason: String?)
    }

    public let events: AsyncStream<Event>
    /// The largest message read from the server (a frame, or fragments joined), bytes.
    package static let maxFrameSize = 1 << 20
    let sink: AsyncStream<Event>.Continuation
    private let url: String
    private let heartbeatWait: @Sendable () async throws -> Void
    private let backoffWait: @Sendable (Double) async throws -> Void
    let clock: any ConvoyClock
    let state: Mutex<State>
    /// The tunnel its connections go through (network conditions); nil: straight to the server.
    private let proxy: TunnelProxy?
    /// How long a connection may take to open before it is given up, seconds.
    private let openTimeout: Double

    /// realtime-js's reconnect delays, seconds; the last repeats.
    public static let backoff: [Double] = [1, 2, 5, 10]
    public static let heartbeatInterval = 25.0
    /// Heartbeats fall due on a grid of this many seconds, so that a fleet's phones heartbeat together in
    /// a few wake-ups a second (3,000 phones: 10 a second instead of 120) rather than each on a timer of its
    /// own; a phone's heartbeat is at most this much late. The server sees the same frames either way.
    public static let heartbeatGrid = 0.1

    /// When the heartbeat after one at `t` is due: `interval` later, rounded up to `heartbeatGrid`
    /// (intervals under ten grid steps, as tests use, are not rounded).
    public static func heartbeatDue(after t: Double, interval: Double) -> Double {
        let due = t + interval
        guard interval >= 10 * heartbeatGrid else { return due }
        // A due time already on the grid but for rounding (25.000000001) stays where it is.
        return ((due / heartbeatGrid) - 1e-6).rounded(.up) * heartbeatGrid
    }
    /// A server-to-client websocket frame's header, plus TCP/IP headers, bytes.
    public static let frameOverhead = 4 + 52

    struct Channel {
        var bindings: [Binding]
        var options = ChannelOptions()
        var joined = false
        var joinRef = ""
        /// Pushes made while it was not joined, sent once it is (realtime-js's push buffer).
        var buffered: [Buffered] = []
    }

    /// A push waiting for its channel to be joined: its ref, event and payload, and when it was made.
    struct Buffered: Sendable {
        var ref: String
        var event: String
        var payload: JSONValue
        var at: Double
    }

    struct State {
        var token: String
        var channels: [String: Channel] = [:]
        /// The open connection, where frames go in the order they are made.
        var outgoing: RealtimeSocket?
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
    public init(url: String, accessToken: String,
                clock: any ConvoyClock = SystemClock(), heartbeatInterval: Double = RealtimeClient.heartbeatInterval, proxy: TunnelProxy? = nil,
                openTimeout: Double = RealtimeClient.openTimeout,
                heartbeatWait: (@Sendable () async throws -> Void)? = nil,
                backoffWait: (@Sendable (Double) async throws -> Void)? = nil) {
        self.clock = clock
        self.proxy = proxy
        self.openTimeout = openTimeout
        (events, sink) = AsyncStream<Event>.makeStream()
        self.url = url
        self.heartbeatWait = heartbeatWait ?? { try await clock.sleep(until: Self.heartbeatDue(after: clock.now(), interval: heartbeatInterval)) }
        self.backoffWait = backoffWait ?? { try await clock.sleep(for: $0) }
        state = Mutex(State(token: accessToken))
    }

    deinit { sink.finish() }

    // MARK: - Channels

    /// Joins `topic` (`realtime:<name>`) with these bindings and options, now
    /// or on connecting (and again after each reconnection). Frames are built
    /// and queued under one lock, so a frame made for one connection never
    /// goes out on the next.
    public func join(_ topic: String, bindings: [Binding] = [], options: ChannelOptions = ChannelOptions()) {
        state.withLock { s in
            s.channels[topic] = Channel(bindings: bindings, options: options)
            if let out = s.outgoing { out.send(Self.joinFrame(topic, &s)) }
        }
    }

    public func leave(_ topic: String) {
        state.withLock { s in
            guard s.channels.removeValue(forKey: topic) != nil else { return }
            s.outgoing?.send(PhoenixFrame(topic: topic, event: PhoenixFrame.Event.leave, ref: s.nextRef()).text)
        }
    }

    /// A new access token: used for every later join, and pushed now to each joined channel.
    public func setAccessToken(_ token: String) {
        state.withLock { s in
            s.token = token
            for (topic, channel) in s.channels where channel.joined {
                s.outgoing?.send(PhoenixFrame(topic: topic, event: PhoenixFrame.Event.accessToken, payload: ["access_token": .string(token)],
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
        // The socket hands each message to `receive` on the event loop that read it: no task reads.
        // `.connected` is reported when the upgrade completes, on the loop, so that it comes before any message.
        let opening = RealtimeSocket.open(url: url, proxy: proxy, maxFrameSize: Self.maxFrameSize, onOpen: { [sink] in
            opened()
            sink.yield(.connected(attempt: attempt))
        }) { [weak self] text in self?.receive(text) }
        // A connection that is not open (upgraded) within `openTimeout` is given up, as a browser gives up a
        // websocket whose handshake stalls (a server that takes the connection and never answers).
        let timer = Task { [clock, openTimeout] in
            try? await clock.sleep(for: openTimeout)
            if !Task.isCancelled { opening.giveUp(OpenTimeout()) }
        }
        let socket: RealtimeSocket
        do {
            socket = try await withTaskCancellationHandler { try await opening.future.get() } onCancel: { opening.giveUp(CancellationError()) }
            timer.cancel()
        } catch {
            timer.cancel()
            throw error
        }
        state.withLock { s in
            s.outgoing = socket
            for topic in s.channels.keys.sorted() { socket.send(Self.joinFrame(topic, &s)) }
        }
        // The first to end (the server closed, or a heartbeat went unanswered) ends the connection.
        try await withTaskCancellationHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await socket.closed.get() }
                group.addTask {
                    while true {
                        try await self.heartbeatWait()
                        // Phoenix: a heartbeat still unanswered at the next one means the connection is dead.
                        let frame = self.state.withLock { s -> String? in
                            if s.pendingHeartbeat != nil { return nil }
                            let ref = s.nextRef()
                            s.pendingHeartbeat = (ref, self.clock.now())
                            return PhoenixFrame.heartbeatText(ref: ref)
                        }
                        guard let frame else { throw HeartbeatTimeout() }
                        socket.send(frame)
                    }
                }
                defer {
                    group.cancelAll()
                    socket.close()
                }
                try await group.next()
            }
        } onCancel: {
            socket.close()
        }
    }
}
