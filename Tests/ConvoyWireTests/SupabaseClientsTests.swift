import ConvoyJSON
import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import Synchronization
import Testing

/// Convoy's Supabase clients against `convoy serve`: the same wire formats a
/// real project speaks.
@Suite struct SupabaseClientsTests {
    /// Waits (bounded) for the first event that `match` picks out.
    static func next<T>(_ events: inout AsyncStream<RealtimeClient.Event>.Iterator, _ match: (RealtimeClient.Event) -> T?) async throws -> T {
        while let e = await events.next() {
            if let t = match(e) { return t }
        }
        throw CancellationError()
    }

    @Test func authRestAndRealtimeWorkTogether() async throws {
        let server = try await HTTPEngineTests.server()
        let keys = server.keys
        let engine = try HTTPEngine()
        let target = SupabaseTarget(url: keys.url, anonKey: keys.anonKey)
        let http = SupabaseHTTP(engine: engine, target: target, connection: try HTTPConnection(engine: engine))
        let auth = SupabaseAuth(http), rest = SupabaseREST(http)

        let alice = try await auth.signUp(email: "alice@example.com", password: "secret123")
        let bob = try await auth.signUp(email: "bob@example.com", password: "secret123")
        #expect(alice.email == "alice@example.com" && !alice.userID.isEmpty && alice.expiresAt > Date().timeIntervalSince1970)
        do {
            _ = try await auth.signIn(email: "alice@example.com", password: "wrong")
            Issue.record("a wrong password signed in")
        } catch {
            #expect(error.status == 400 && error.code == "invalid_credentials")
        }
        let again = try await auth.refresh(alice.refreshToken)
        #expect(again.userID == alice.userID && again.refreshToken != alice.refreshToken, "refresh tokens rotate")

        for (user, key) in [(alice, "pk-a"), (bob, "pk-b")] {
            try await rest.insert("users", json: Array(#"{"id":"\#(user.userID)","public_key":"\#(key)"}"#.utf8), token: user.accessToken)
        }
        let invite = try await rest.rpc("create_invite", ["preference": "precise"], token: alice.accessToken)
        let code = try #require(invite["code"]?.string)
        let friendship = try await rest.rpc("accept_invite", ["code": .string(code), "preference": "general"], token: bob.accessToken)
        #expect(friendship["status"]?.string == "active")

        // Bob listens for his rows; Alice posts one.
        let realtime = RealtimeClient(url: target.realtimeURL, accessToken: bob.accessToken)
        let running = Task { await realtime.run() }
        var events = realtime.events.makeAsyncIterator()
        realtime.join("realtime:bob", bindings: [.init(table: "encrypted_locations", filter: "recipient_id=eq.\(bob.userID)")])
        _ = try await Self.next(&events) { if case .subscribed(let t) = $0 { t } else { nil } }
        try await rest.insert("encrypted_locations",
                              json: Array(#"[{"sender_id":"\#(alice.userID)","recipient_id":"\#(bob.userID)","payload":"sealed"}]"#.utf8),
                              token: alice.accessToken)
        let change = try await Self.next(&events) { if case .change(_, let c) = $0 { c } else { nil } }
        #expect(change.type == "INSERT" && change.record["payload"] == "sealed" && change.record["sender_id"] == alice.userID)
        #expect(Int(change.record["id"] ?? "") != nil, "numbers arrive as their text")

        // RLS refuses a spoofed sender, as the service's own error.
        do {
            try await rest.insert("encrypted_locations",
                                  json: Array(#"{"sender_id":"\#(bob.userID)","recipient_id":"\#(alice.userID)","payload":"x"}"#.utf8),
                                  token: alice.accessToken)
            Issue.record("a spoofed sender_id was accepted")
        } catch {
            #expect(error.status == 403 && error.code == "42501")
        }
        let rows = try await rest.select("encrypted_locations", query: "select=payload&order=id", token: bob.accessToken)
        #expect(rows.map { $0["payload"]?.string } == ["sealed"])

        // A new token is pushed to the joined channel, which keeps delivering.
        let fresh = try await SupabaseAuth(http).refresh(bob.refreshToken)
        realtime.setAccessToken(fresh.accessToken)
        try await rest.insert("encrypted_locations",
                              json: Array(#"{"sender_id":"\#(alice.userID)","recipient_id":"\#(bob.userID)","payload":"second"}"#.utf8),
                              token: alice.accessToken)
        let second = try await Self.next(&events) { if case .change(_, let c) = $0 { c } else { nil } }
        #expect(second.record["payload"] == "second")

        running.cancel()
        engine.shutdown()
        await server.stop()
    }

    /// A websocket server at Realtime's path that reads every message and never replies: its port, its task
    /// (cancel it to stop), and the text messages it read.
    static func silentRealtimeServer() async throws -> (port: Int, serving: Task<Void, any Error>, frames: AsyncStream<String>) {
        let router = Router(context: BasicWebSocketRequestContext.self)
        let (frames, frameSink) = AsyncStream<String>.makeStream()
        router.ws("realtime/v1/websocket") { _, _ in .upgrade([:]) } onUpgrade: { inbound, _, _ in
            for try await message in inbound.messages(maxSize: 1 << 20) {
                if case .text(let text) = message { frameSink.yield(text) }
            }
        }
        let (ready, readySink) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let app = Application(router: Router(), server: .http1WebSocketUpgrade(webSocketRouter: router),
                              configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { readySink.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let serving = Task { try await app.runService() }
        var ports = ready.makeAsyncIterator()
        let port = try #require(await ports.next())
        return (port, serving, frames)
    }

    /// A server that accepts the websocket and never answers: the second
    /// heartbeat finds the first unanswered and the client drops the connection.
    @Test func anUnansweredHeartbeatDropsTheConnection() async throws {
        let (port, serving, _) = try await Self.silentRealtimeServer()

        let ticker = Ticker()
        let realtime = RealtimeClient(url: "ws://127.0.0.1:\(port)/realtime/v1/websocket?apikey=k&vsn=1.0.0", accessToken: "t",
                                      heartbeatWait: { try await ticker.wait() },
                                      backoffWait: { _ in try await Task.sleep(for: .seconds(3600)) })
        let running = Task { await realtime.run() }
        var events = realtime.events.makeAsyncIterator()
        #expect(try await Self.next(&events) { if case .connected(let a) = $0 { a } else { nil } } == 0)
        ticker.tick()  // the first heartbeat goes out
        ticker.tick()  // the second finds it unanswered
        let reason = try await Self.next(&events) { if case .disconnected(let r) = $0 { r } else { nil } }
        #expect(reason.contains("heartbeat timeout"), "\(reason)")
        running.cancel()
        serving.cancel()
    }

    /// With no injected wait, heartbeats fall due on the 100 ms grid, 25 s after the last (rounded up):
    /// a phone connected at 0.03 s heartbeats at 25.1 s and then at 50.1 s.
    @Test func heartbeatsFallDueOnTheGrid() async throws {
        let (port, serving, frames) = try await Self.silentRealtimeServer()

        let clock = ManualClock()
        clock.advance(to: 0.03)
        let realtime = RealtimeClient(url: "ws://127.0.0.1:\(port)/realtime/v1/websocket?apikey=k&vsn=1.0.0", accessToken: "t",
                                      clock: clock, backoffWait: { _ in try await Task.sleep(for: .seconds(3600)) })
        let running = Task { await realtime.run() }
        var events = realtime.events.makeAsyncIterator()
        #expect(try await Self.next(&events) { if case .connected(let a) = $0 { a } else { nil } } == 0)
        // The heartbeat's timer, once set: the only one at 25 s or later (the open's deadline is 20.03 s).
        let first = await clock.sleeper { $0 >= 25 }
        try #require(abs(first - 25.1) < 1e-9, "due at \(first)")  // (required: otherwise the frame below never comes)
        clock.advance(to: first)
        var received = frames.makeAsyncIterator()
        let frame = try #require(await received.next())
        #expect(frame.contains("\"heartbeat\""), "\(frame)")
        // The server never answered: the next heartbeat finds this one pending, on the grid again.
        let second = await clock.sleeper { $0 > 26 }
        #expect(abs(second - 50.1) < 1e-9, "due at \(second)")
        running.cancel()
        serving.cancel()
    }

    /// The due time itself: at or after `interval`, within one grid step, on the grid; short intervals
    /// (as tests use) unchanged.
    @Test func heartbeatDueTimesAreOnTheGrid() {
        let grid = RealtimeClient.heartbeatGrid
        for t in stride(from: 0.0, to: 3.0, by: 0.0137) {
            let due = RealtimeClient.heartbeatDue(after: t, interval: 25)
            #expect(due >= t + 25 - 1e-6 && due < t + 25 + grid, "\(t) -> \(due)")
            #expect(abs(due / grid - (due / grid).rounded()) < 1e-6, "\(t) -> \(due)")
        }
        #expect(RealtimeClient.heartbeatDue(after: 0, interval: 25) == 25)
        #expect(abs(RealtimeClient.heartbeatDue(after: 1.000000001, interval: 25) - 26) < 1e-9)
        #expect(RealtimeClient.heartbeatDue(after: 0.123, interval: 0.5) == 0.623)
    }

    /// A server that takes the connection and never answers the upgrade (a stalled handshake, a
    /// proxy tunnel cut mid-way): the attempt is given up after `openTimeout`, and the client tries again.
    @Test func aConnectionThatNeverOpensIsGivenUpAndTriedAgain() async throws {
        let (fd, port) = try HTTPEngineTests.silentPort()
        defer { close(fd) }
        let realtime = RealtimeClient(url: "ws://127.0.0.1:\(port)/realtime/v1/websocket?apikey=k&vsn=1.0.0", accessToken: "t",
                                      openTimeout: 0.3, backoffWait: { _ in })
        let running = Task { await realtime.run() }
        var events = realtime.events.makeAsyncIterator()
        let reason = try await Self.next(&events) { if case .disconnected(let r) = $0 { r } else { nil } }
        #expect(reason.contains("did not open in time"), "\(reason)")
        let again = try await Self.next(&events) { if case .disconnected(let r) = $0 { r } else { nil } }
        #expect(again.contains("did not open in time"), "tried again: \(again)")
        running.cancel()
    }

    /// Heartbeats on an injected tick; after the server goes away, reconnects
    /// with realtime-js's backoff and rejoins when it is back.
    @Test func heartbeatsReconnectsAndRejoins() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-wire-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var config = ServerConfiguration.testing
        config.databasePath = dir.appendingPathComponent("db.sqlite").path
        config.jwtSecret = String(repeating: "s", count: 40)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let first = try await EmbeddedServer.start(config, logger: logger)
        let keys = first.keys
        config.port = Int(keys.url.split(separator: ":").last!)!
        let engine = try HTTPEngine()
        let target = SupabaseTarget(url: keys.url, anonKey: keys.anonKey)
        let user = try await SupabaseAuth(SupabaseHTTP(engine: engine, target: target)).signUp(email: "hb@example.com", password: "secret123")

        let ticker = Ticker()
        let waits = Mutex<[Double]>([])
        let (gate, openGate) = AsyncStream<Void>.makeStream()
        let realtime = RealtimeClient(
            url: target.realtimeURL, accessToken: user.accessToken,
            heartbeatWait: { try await ticker.wait() },  // one heartbeat per tick the test sends
            backoffWait: { delay in
                let n = waits.withLock { $0.append(delay); return $0.count }
                if n == 4 { for await _ in gate { break } }  // hold the fourth wait until the server is back
            })
        let running = Task { await realtime.run() }
        var events = realtime.events.makeAsyncIterator()
        realtime.join("realtime:me", bindings: [.init(table: "encrypted_locations", filter: "recipient_id=eq.\(user.userID)")])
        #expect(try await Self.next(&events) { if case .connected(let a) = $0 { a } else { nil } } == 0)
        _ = try await Self.next(&events) { if case .subscribed(let t) = $0 { t } else { nil } }
        ticker.tick()
        let roundTrip = try await Self.next(&events) { if case .heartbeat(let rt) = $0 { rt } else { nil } }
        #expect(roundTrip >= 0)

        // The server goes away: the client waits 1, 2, 5, 10 s (injected) between attempts.
        await first.stop()
        _ = try await Self.next(&events) { if case .disconnected(let r) = $0 { r } else { nil } }
        while waits.withLock({ $0.count }) < 4 { await Task.yield() }
        #expect(waits.withLock { $0 } == [1, 2, 5, 10])
        let second = try await EmbeddedServer.start(config, logger: logger)
        openGate.yield()
        #expect(try await Self.next(&events) { if case .connected(let a) = $0 { a } else { nil } } == 4)
        _ = try await Self.next(&events) { if case .subscribed(let t) = $0 { t } else { nil } }

        running.cancel()
        engine.shutdown()
        await second.stop()
    }
}

/// Heartbeat ticks the test hands out one at a time. (An AsyncStream would
/// not do: cancelling a task that waits on one finishes the stream for good.)
final class Ticker: Sendable {
    private struct State {
        var permits = 0
        var waiter: (id: UInt64, continuation: CheckedContinuation<Void, any Error>)?
        var next: UInt64 = 0
    }
    private let state = Mutex(State())

    func tick() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, any Error>? in
            guard let w = s.waiter else {
                s.permits += 1
                return nil
            }
            s.waiter = nil
            return w.continuation
        }
        waiter?.resume()
    }

    func wait() async throws {
        let id = state.withLock { s -> UInt64 in
            s.next += 1
            return s.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let now = state.withLock { s -> Result<Void, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if s.permits > 0 {
                        s.permits -= 1
                        return .success(())
                    }
                    s.waiter = (id, c)
                    return nil
                }
                if let now { c.resume(with: now) }
            }
        } onCancel: {
            let c = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                guard let w = s.waiter, w.id == id else { return nil }
                s.waiter = nil
                return w.continuation
            }
            c?.resume(throwing: CancellationError())
        }
    }
}
