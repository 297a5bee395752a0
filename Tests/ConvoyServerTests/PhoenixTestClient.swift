import Foundation
import Logging
import Testing
import WSClient

/// A Phoenix v1 client over a real websocket, for tests: send frames, and
/// wait (bounded) for frames that match.
final class PhoenixTestClient: Sendable {
    actor Inbox {
        var frames: [String] = []
        func add(_ f: String) { frames.append(f) }
        func take(_ match: @Sendable ([String: Any]) -> Bool) -> String? {
            guard let i = frames.firstIndex(where: { match(Self.decode($0)) }) else { return nil }
            return frames.remove(at: i)
        }
        func all() -> [String] { frames }
        func contains(_ match: @Sendable ([String: Any]) -> Bool) -> Bool { frames.contains { match(Self.decode($0)) } }
        static func decode(_ s: String) -> [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any]) ?? [:]
        }
    }

    let inbox = Inbox()
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Task<Void, any Error>
    private let refs = Counter()

    final class Counter: @unchecked Sendable {
        private var n = 0
        private let lock = NSLock()
        func next() -> String { lock.withLock { n += 1; return String(n) } }
    }

    init(url: String, apikey: String) async throws {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        outgoing = continuation
        let inbox = self.inbox
        let wsURL = url.replacingOccurrences(of: "http://", with: "ws://") + "/realtime/v1/websocket?apikey=\(apikey)&vsn=1.0.0"
        var logger = Logger(label: "ws-test")
        logger.logLevel = .critical
        task = Task {
            try await WebSocketClient.connect(url: wsURL, configuration: .init(maxFrameSize: 1 << 20), logger: logger) { inbound, outbound, _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await text in stream { try await outbound.write(.text(text)) }
                    }
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let t) = message { await inbox.add(t) }
                    }
                    group.cancelAll()
                }
            }
        }
    }

    deinit {
        outgoing.finish()
        task.cancel()
    }

    @discardableResult
    func send(_ topic: String, _ event: String, _ payload: [String: Any] = [:]) -> String {
        let ref = refs.next()
        let frame: [String: Any] = ["topic": topic, "event": event, "payload": payload, "ref": ref, "join_ref": ref]
        outgoing.yield(String(decoding: try! JSONSerialization.data(withJSONObject: frame), as: UTF8.self))
        return ref
    }

    /// Sends `text` as it is: a frame that breaks the protocol.
    func sendText(_ text: String) { outgoing.yield(text) }

    /// A frame whose event or payload may be any JSON value (nil: no payload at all); its ref.
    @discardableResult
    func sendRaw(_ topic: String, event: Any, payload: Any?) -> String {
        let ref = refs.next()
        var frame: [String: Any] = ["topic": topic, "event": event, "ref": ref, "join_ref": ref]
        if let payload { frame["payload"] = payload }
        sendText(String(decoding: try! JSONSerialization.data(withJSONObject: frame), as: UTF8.self))
        return ref
    }

    /// The reply to `ref` if there is one: a heartbeat round trip shows everything the server sent before it.
    func answer(to ref: String) async throws -> [String: Any]? {
        try await sync()
        return await inbox.take { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == ref }.map(Inbox.decode)
    }

    /// The first frame that matches, waiting up to 30 s (a bound for a starved machine, not a timing assertion).
    func next(_ match: @escaping @Sendable ([String: Any]) -> Bool) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let f = await inbox.take(match) { return Inbox.decode(f) }
            try await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("no matching frame; have: \(await inbox.all().joined(separator: "\n"))")
        return [:]
    }

    func next(topic: String, event: String) async throws -> [String: Any] {
        try await next { $0["topic"] as? String == topic && $0["event"] as? String == event }
    }

    func reply(to ref: String) async throws -> [String: Any] {
        try await next { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == ref }
    }

    /// A heartbeat round trip: everything the server queued before it has arrived.
    func sync() async throws {
        _ = try await reply(to: send("phoenix", "heartbeat"))
    }

    func join(_ topic: String, token: String?, changes: [[String: Any]] = [], broadcastSelf: Bool = false,
              ack: Bool = false, presenceKey: String = "", isPrivate: Bool = false) async throws -> [String: Any] {
        var payload: [String: Any] = ["config": [
            "broadcast": ["ack": ack, "self": broadcastSelf], "presence": ["key": presenceKey],
            "postgres_changes": changes, "private": isPrivate,
        ] as [String: Any]]
        if let token { payload["access_token"] = token }
        let reply = try await reply(to: send(topic, "phx_join", payload))
        // As realtime-js's clients do, changes are expected once the server says
        // "Subscribed to PostgreSQL" (left in the inbox for tests that read it):
        // the reply can reach the client before the subscription is indexed.
        if !changes.isEmpty, (reply["payload"] as? [String: Any])?["status"] as? String == "ok" {
            let deadline = ContinuousClock.now + .seconds(30)
            let subscribed: @Sendable ([String: Any]) -> Bool = {
                $0["topic"] as? String == topic && $0["event"] as? String == "system"
                    && ($0["payload"] as? [String: Any])?["message"] as? String == "Subscribed to PostgreSQL"
            }
            while !(await inbox.contains(subscribed)) {
                guard ContinuousClock.now < deadline else {
                    Issue.record("\(topic): joined, but no \"Subscribed to PostgreSQL\" within 30 s")
                    break
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        return reply
    }

    func count(_ event: String) async -> Int {
        await inbox.all().filter { Inbox.decode($0)["event"] as? String == event }.count
    }
}
