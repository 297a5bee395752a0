import ConvoyJSON
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Synchronization
import WSClient

/// `convoy-bench server`: `convoy serve` (release, its own process, SQLite or
/// the PostgreSQL database given with `--database`) with
/// N users, each holding one Realtime connection subscribed to its own rows.
/// Measures insert throughput, then Realtime delivery latency (insert sent →
/// change received) under a paced open-loop load. Client and server share
/// the machine, so the figures include the client's cost.
struct ServerBench {
    var subscribers = 1000
    var throughputSeconds = 10.0
    var latencyRate = 500.0  // rows per second, open loop
    var latencySeconds = 20.0
    /// A postgres:// URL; nil: a new SQLite file.
    var database: String?

    struct Keys: Decodable { let url: String; let anon_key: String }

    func run() async throws {
        let convoy = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("convoy").path
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-bench-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let keysPath = dir.appendingPathComponent("keys.json").path
        let server = Process()
        server.executableURL = URL(fileURLWithPath: convoy)
        server.arguments = ["serve", "--port", "0", "--keys-file", keysPath, "--purge-every", "0", "--rate-limits", "off",
                            "--database", database ?? dir.appendingPathComponent("bench.sqlite").path]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { server.terminate(); server.waitUntilExit() }
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: keysPath), Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let keys = try JSONDecoder().decode(Keys.self, from: Data(contentsOf: URL(fileURLWithPath: keysPath)))
        let http = HTTP(base: keys.url, apikey: keys.anon_key)

        // Users, in parallel batches.
        let t0 = Date()
        var signedUp: [(id: String, token: String)] = []
        for batch in stride(from: 0, to: subscribers, by: 50) {
            try await withThrowingTaskGroup(of: (String, String).self) { group in
                for i in batch..<min(batch + 50, subscribers) {
                    group.addTask { try await http.newUser(i) }
                }
                for try await u in group { signedUp.append(u) }
            }
        }
        print("server: store \(database == nil ? "SQLite (WAL)" : "PostgreSQL")")
        print(String(format: "server: %d users signed up with profiles in %.1f s", signedUp.count, Date().timeIntervalSince(t0)))

        // One Realtime connection each, subscribed to its own rows.
        let users = signedUp
        let tally = Tally()
        // A let: a var captured by each socket's task is refused as a data race under -sanitize=thread.
        let logger = { var l = Logger(label: "bench"); l.logLevel = .critical; return l }()
        let wsURL = keys.url.replacingOccurrences(of: "http://", with: "ws://") + "/realtime/v1/websocket?apikey=\(keys.anon_key)&vsn=1.0.0"
        var sockets: [Task<Void, any Error>] = []
        for u in users {
            let join = #"{"topic":"realtime:me","event":"phx_join","ref":"1","join_ref":"1","payload":{"config":{"broadcast":{"ack":false,"self":false},"presence":{"key":""},"postgres_changes":[{"event":"INSERT","schema":"public","table":"encrypted_locations","filter":"recipient_id=eq.\#(u.id)"}],"private":false},"access_token":"\#(u.token)"}}"#
            sockets.append(Task {
                try await WebSocketClient.connect(url: wsURL, logger: logger) { inbound, outbound, _ in
                    try await outbound.write(.text(join))
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message else { continue }
                        if text.contains("\"Subscribed to PostgreSQL\"") { tally.joined.withLock { $0 += 1 } }
                        if text.contains("\"bulk\"") { tally.bulkDelivered.withLock { $0 += 1 } }
                        if let r = text.range(of: "t=") {
                            let digits = text[r.upperBound...].prefix { $0.isNumber }
                            if let sent = UInt64(digits) {
                                let ms = Double(DispatchTime.now().uptimeNanoseconds &- sent) / 1e6
                                tally.latencies.withLock { $0.append(ms) }
                            }
                        }
                    }
                }
            })
        }
        let joinDeadline = Date().addingTimeInterval(120)
        while tally.joined.withLock({ $0 }) < users.count, Date() < joinDeadline { try await Task.sleep(for: .milliseconds(50)) }
        print("server: \(tally.joined.withLock { $0 }) Realtime connections joined")

        // Throughput: 8 closed-loop senders, bulk inserts of 10 rows to random subscribers.
        let stop = Date().addingTimeInterval(throughputSeconds)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for s in 0..<8 {
                group.addTask {
                    var k = s
                    while Date() < stop {
                        let sender = users[k % users.count]
                        let batch = (0..<10).map { j in users[(k * 10 + j) % users.count].id }
                        try await http.insert(from: sender, to: batch, tag: "bulk")
                        tally.rows.withLock { $0 += 10 }
                        k += 8
                    }
                }
            }
            try await group.waitForAll()
        }
        let inserted = tally.rows.withLock { $0 }
        print(String(format: "server: inserts %.0f rows/s (%.0f requests/s of 10 rows) for %.0f s, 8 senders",
                     Double(inserted) / throughputSeconds, Double(inserted) / 10 / throughputSeconds, throughputSeconds))
        // Realtime must deliver every bulk row before the latency run starts: wait
        // until all have arrived, or until none arrived for 5 s.
        let drainStart = Date()
        var last = -1, quietSince = Date()
        while tally.bulkDelivered.withLock({ $0 }) < inserted {
            let now = tally.bulkDelivered.withLock { $0 }
            if now != last { last = now; quietSince = Date() }
            if Date().timeIntervalSince(quietSince) > 5 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let delivered = tally.bulkDelivered.withLock { $0 }
        let drained = Date().timeIntervalSince(drainStart) + throughputSeconds
        print(String(format: "server: Realtime delivered %d of %d bulk rows within %.1f s of the first insert (%.0f rows/s)",
                     delivered, inserted, drained, Double(delivered) / drained))
        tally.latencies.withLock { $0.removeAll() }

        // Latency: open loop at a fixed rate; each row carries its send time.
        let total = Int(latencyRate * latencySeconds)
        let start = DispatchTime.now().uptimeNanoseconds
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<total {
                let due = start + UInt64(Double(n) / latencyRate * 1e9)
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { try await Task.sleep(for: .nanoseconds(Int(due - now))) }
                group.addTask {
                    let sender = users[n % users.count], to = users[(n * 7 + 1) % users.count]
                    // The intended send time, not the actual one: no coordinated omission.
                    try await http.insert(from: sender, to: [to.id], tag: "t=\(due)")
                }
            }
            try await group.waitForAll()
        }
        try await Task.sleep(for: .seconds(2))
        let samples = tally.latencies.withLock { $0 }.sorted()
        func q(_ p: Double) -> Double { samples.isEmpty ? .nan : samples[min(samples.count - 1, Int(p * Double(samples.count)))] }
        print(String(format: "server: Realtime delivery, %d subscribers, %.0f rows/s for %.0f s: delivered %d of %d; p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms",
                     users.count, latencyRate, latencySeconds, samples.count, total, q(0.5), q(0.9), q(0.99), samples.last ?? .nan))
        for s in sockets { s.cancel() }
    }
}

/// What the bench's tasks count, shared.
final class Tally: Sendable {
    let latencies = Mutex<[Double]>([])
    let joined = Mutex(0)
    let rows = Mutex(0)
    let bulkDelivered = Mutex(0)
}

/// The few REST calls the bench makes, on URLSession.
struct HTTP: Sendable {
    let base: String
    let apikey: String

    func call(_ method: String, _ path: String, _ body: JSONValue, token: String? = nil) async throws -> JSONValue {
        var r = URLRequest(url: URL(string: base + path)!)
        r.httpMethod = method
        r.setValue(apikey, forHTTPHeaderField: "apikey")
        r.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let token { r.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        r.httpBody = Data(body.text.utf8)
        let (data, response) = try await URLSession.shared.data(for: r)
        guard let code = (response as? HTTPURLResponse)?.statusCode, code < 300 else {
            throw CocoaError(.coderInvalidValue, userInfo: [NSLocalizedDescriptionKey: "\(method) \(path): \(String(decoding: data, as: UTF8.self))"])
        }
        return JSONScanner.parse(Array(data)) ?? [:]
    }

    func newUser(_ i: Int) async throws -> (String, String) {
        let s = try await call("POST", "/auth/v1/signup", ["email": .string("bench\(i)-\(UUID().uuidString.prefix(6))@example.com"), "password": "secret123"])
        guard let id = s["user"]?["id"]?.string, let token = s["access_token"]?.string else {
            throw CocoaError(.coderInvalidValue, userInfo: [NSLocalizedDescriptionKey: "sign-up: no user id or access token in \(s.text)"])
        }
        _ = try await call("POST", "/rest/v1/users", ["id": .string(id), "public_key": "pk"], token: token)
        return (id, token)
    }

    func insert(from sender: (id: String, token: String), to recipients: [String], tag: String) async throws {
        let rows = recipients.map { ["sender_id": .string(sender.id), "recipient_id": .string($0), "payload": .string(tag)] as JSONValue }
        _ = try await call("POST", "/rest/v1/encrypted_locations", .array(rows), token: sender.token)
    }
}
