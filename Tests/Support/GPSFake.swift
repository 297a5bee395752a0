import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// gpsfake (gpsd's replay harness: a pty per log, a real gpsd reading them) on
/// a free loopback port with a TMPDIR of its own, for tests: ConvoyGeoTests'
/// and ConvoyCLITests' live suites.
///
/// With CONVOY_REQUIRE_GPSD=1 (`make test`) a missing gpsfake fails the
/// tests; otherwise they are skipped with `GPSFake.skipMessage`.
public final class GPSFake: @unchecked Sendable {
    public static let required = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_GPSD"] == "1"
    static let searchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    public static var available: Bool { find("gpsfake") != nil && find("gpsd") != nil }
    public static let skipMessage: Comment = "gpsfake or gpsd is not installed (Debian: gpsd, gpsd-clients; scripts/setup installs them)"

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let port: Int
    private let directory: URL
    private var process: TestProcess
    private let executable: URL
    private let arguments: [String]
    private let environment: [String: String]
    private let deviceCount: Int

    /// Starts gpsfake replaying `logs` (each its own device), `cycle` seconds
    /// between sentences, looping. Call `waitUntilListening()` before connecting.
    ///
    /// Started as a `TestProcess` (posix_spawn, an empty signal mask and default
    /// handlers): a child of Foundation's `Process` inherits the test runner's
    /// blocked signals, and a gpsfake (and its gpsd) that cannot see SIGTERM never stops.
    public init(_ logs: [String], port: Int? = nil, cycle: Double = 0.01) throws {
        guard let exe = Self.find("gpsfake"), Self.find("gpsd") != nil else {
            throw Failure(description: "gpsfake or gpsd is missing: install gpsd and gpsd-clients (scripts/setup)")
        }
        self.port = try port ?? Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-gpsfake-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = directory.path
        env["PATH"] = Self.searchPath + ":" + (env["PATH"] ?? "")
        executable = URL(fileURLWithPath: exe)
        arguments = ["-P", String(self.port), "-n", "-q", "-c", String(cycle)] + logs
        environment = env
        deviceCount = logs.count
        process = TestProcess()
        process = try launch()
    }

    /// gpsfake as a `TestProcess` (empty signal mask, default handlers), its stderr in `gpsfake.err`.
    private func launch() throws -> TestProcess {
        let p = TestProcess()
        p.executableURL = executable
        p.arguments = arguments
        p.environment = environment
        FileManager.default.createFile(atPath: logPath, contents: nil)
        p.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        p.standardError = FileHandle(forWritingAtPath: logPath)
        try p.run()
        return p
    }

    deinit { stopNow() }

    private var logPath: String { directory.appendingPathComponent("gpsfake.err").path }

    private var isRunning: Bool { process.isRunning }

    /// Waits until gpsd accepts a connection and lists every replayed log as a
    /// device (`?DEVICES`), or fails after `timeout` seconds with gpsfake's stderr.
    /// gpsd listens before gpsfake has added the devices; a gpsfake that has not
    /// added them within `deviceTimeout` (seen on a loaded machine: gpsd up, no
    /// device, no fix ever) is started once more.
    public func waitUntilListening(timeout: Double = 60, deviceTimeout: Double = 20) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        var restarted = false
        var devicesDeadline = Date().addingTimeInterval(deviceTimeout)
        while Date() < deadline {
            guard isRunning else {
                throw Failure(description: "gpsfake exited before its gpsd listed its devices: \(stderrText)")
            }
            if Self.devices(port: port) >= deviceCount { return }
            if Date() > devicesDeadline {
                guard !restarted else { break }
                restarted = true
                await stop()
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                process = try launch()
                devicesDeadline = Date().addingTimeInterval(deviceTimeout)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "gpsfake's gpsd did not list \(deviceCount) device(s) on 127.0.0.1:\(port) within \(timeout) s: \(stderrText)")
    }

    private var stderrText: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// How many devices gpsd on `port` lists in answer to `?DEVICES;` (0 if it does not answer within a second).
    public static func devices(port: Int) -> Int {
        guard let fd = connected(port: port) else { return 0 }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let ask = Array("?DEVICES;\n".utf8)
        guard write(fd, ask, ask.count) == ask.count else { return 0 }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while received.count < 65_536 {
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { return 0 }
            received += chunk[0..<n]
            // Lines end in CR LF (one Character in Swift: drop the CRs); a DEVICES line is complete when its LF has come.
            let text = String(decoding: received.filter { $0 != 0x0D }, as: UTF8.self)
            for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() where line.contains(#""class":"DEVICES""#) {
                return line.components(separatedBy: #""path":"#).count - 1
            }
        }
        return 0
    }

    /// SIGTERM (gpsfake then stops its gpsd and exits), waited for with a deadline;
    /// SIGKILL only if it has not gone by then.
    public func stop(timeout: Double = 15) async {
        process.terminate()
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        stopNow()
    }

    private func stopNow() {
        if isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(5)
            while isRunning, Date() < deadline { usleep(20_000) }
            if isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    static func find(_ name: String) -> String? {
        let path = searchPath + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "")
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Binds port 0 on 127.0.0.1, reads the port back, closes.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var addr = loopback(port: 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard ok else { throw Failure(description: "bind 127.0.0.1:0: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// A socket connected to 127.0.0.1:`port` (the caller closes it), or nil.
    static func connected(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = loopback(port: port)
        let ok = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        if ok { return fd }
        close(fd)
        return nil
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return addr
    }
}
