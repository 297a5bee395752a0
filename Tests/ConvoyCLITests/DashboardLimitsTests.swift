import Foundation
import Testing
import ConvoyTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `--dashboard :PORT` and `--metrics-listen :PORT` listen on every interface with no login: they get `convoy serve`'s
/// limits (a head too large is 431; the head, body and idle clocks; the accept pause), a cap on the pages following the
/// run at once, and files only by name from the run's folder.
@Suite struct DashboardLimitsTests {
    /// A connection to `port` that sends `request` and reads the answer's head (until a blank line, the connection's
    /// end, or 20 s); the connection stays open (`fd`) for the caller to close.
    static func send(_ port: Int, _ request: String) -> (fd: Int32, head: String) {
        let fd = ServeLimitsTests.connection(port: port)
        guard fd >= 0 else { return (fd, "") }
        var wait = timeval(tv_sec: 20, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }  // the server may answer and close before it has read all of a request it refuses
            sent += n
        }
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Until the head's blank line has come (an event stream goes on after it).
        while String(decoding: got, as: UTF8.self).range(of: "\r\n\r\n") == nil {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            got += buffer[..<n]
        }
        return (fd, String(decoding: got, as: UTF8.self))
    }

    static func status(_ head: String) -> Int { head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0 }

    static func port(_ url: String) -> Int { URL(string: url)?.port ?? 0 }

    @Test func theDashboardAndTheMetricsAreHeldToTheServersLimits() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (process, watch) = try CLI.start(["run", try CLI.longScenario(in: dir), "--out", dir.appendingPathComponent("r").path,
                                              "--dashboard", "0", "--dashboard-control", "--metrics-listen", "0"])
        defer { if process.isRunning { process.terminate() } }
        let dashboard = Self.port(try #require(await watch.address(after: "dashboard at "), "\(watch.all)"))
        let metrics = Self.port(try #require(await watch.address(after: "Prometheus metrics at "), "\(watch.all)"))

        // A head past the limit (64 KiB) is 431 on both, as on `convoy serve`.
        let big = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 70_000))\r\n\r\n"
        for port in [dashboard, metrics] {
            let (fd, head) = Self.send(port, big)
            close(fd)
            #expect(Self.status(head) == 431, "port \(port): \(head)")
        }
        // A stop that declares a body is refused before its token is looked at.
        let (stopFd, stop) = Self.send(dashboard, "POST /api/stop HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n")
        close(stopFd)
        #expect(Self.status(stop) == 413, "\(stop)")
        // Files only by name, from the run's folder: nothing else however the path is written.
        for path in ["/api/results/..%2F..%2F..%2F..%2Fetc%2Fpasswd", "/api/results/../../../../etc/passwd", "/report.html/../../../etc/passwd",
                     "/api/results/%2Fetc%2Fpasswd", "/..%2f..%2fetc%2fpasswd"] {
            let (fd, head) = Self.send(dashboard, "GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            var rest = [UInt8](repeating: 0, count: 65_536)
            let n = recv(fd, &rest, rest.count, 0)
            close(fd)
            #expect(Self.status(head) == 404 && !String(decoding: rest[..<max(n, 0)], as: UTF8.self).contains("root:"), "\(path): \(head)")
        }

        // Pages following the run: up to the cap; one more is told to come back; a place frees when a page goes.
        let follow = "GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n"
        var open: [Int32] = []
        defer { open.forEach { close($0) } }
        for k in 0..<64 {
            let (fd, head) = Self.send(dashboard, follow)
            open.append(fd)
            #expect(Self.status(head) == 200 && head.contains("text/event-stream"), "page \(k + 1): \(head)")
        }
        let (refusedFd, refused) = Self.send(dashboard, follow)
        close(refusedFd)
        #expect(Self.status(refused) == 503 && refused.lowercased().contains("retry-after: 10"), "\(refused)")
        close(open.removeLast())
        var admitted = 0
        for _ in 0..<100 where admitted != 200 {  // the server learns of the close when it next writes to that page (a second)
            try await Task.sleep(for: .milliseconds(100))
            let (fd, head) = Self.send(dashboard, follow)
            admitted = Self.status(head)
            if admitted == 200 { open.append(fd) } else { close(fd) }
        }
        #expect(admitted == 200)
        #expect(process.isRunning, "\(watch.all)")
    }

    /// A fake shard's dashboard: `/api/state` answers `state`, anything else `seconds` (Python's http.server). Its port.
    static func fakeShard(state: String, seconds: String) async throws -> (TestProcess, Int) {
        let script = """
            import http.server, sys
            state, seconds = sys.argv[1].encode(), sys.argv[2].encode()
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    body = state if self.path.startswith("/api/state") else seconds
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *a):
                    pass
            s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
            print(f"listening at http://127.0.0.1:{s.server_address[1]}/ ", flush=True)
            s.serve_forever()
            """
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", script, state, seconds]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let url = try #require(await OutputWatch(out).address(after: "listening at "))
        return (p, Self.port(url))
    }

    /// `convoy dashboard` reads what a shard answers as untrusted: an answer that is not a shard's dashboard's JSON is
    /// named (the shard, the path, where it went wrong), and the shard counts as failed after `--patience`; nothing crashes.
    @Test func aShardThatAnswersGarbageIsNamedAndCountsAsFailed() async throws {
        let header = #"{"header":{"scenario":"s","app":"greenbox","devices":2,"planned":60,"window":900,"shares_locations":true,"groups":["g"],"thresholds":[]}}"#
        for (state, seconds, said) in [("{not json", "[]", "no shard's dashboard within 2s: an answer that is not a shard's dashboard's JSON"),
                                       (header, #"[{"seq":"one"}]"#, "api/seconds: an answer that is not a shard's dashboard's JSON (at [0].seq")] {
            let (shard, port) = try await Self.fakeShard(state: state, seconds: seconds)
            defer { shard.terminate() }
            let r = try await CLI.detached("dashboard", "http://127.0.0.1:\(port)/", "--patience", "2s", "--listen", "0")
            #expect(r.status == 1 && r.stderr.contains("127.0.0.1:\(port)/") && r.stderr.contains(said), "\(r.stderr)")
            #expect(!r.stderr.contains("Fatal error"), "\(r.stderr)")
        }
    }
}
