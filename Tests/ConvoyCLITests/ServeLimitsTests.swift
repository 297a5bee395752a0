import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import Testing
import ConvoyTestSupport

/// `convoy serve`'s limits as a user meets them: the flags, and a server out of
/// file descriptors (its own `ulimit -n`, never the test process's).
@Suite struct ServeLimitsTests {
    @Test func helpShowsTheTimeoutsAndLimits() throws {
        let r = try CLI.run("serve", "--help")
        #expect(r.status == 0)
        for text in ["--header-timeout", "--body-timeout", "--idle-timeout", "(default: 10s)", "(default: 30s)", "(default: 60s)", "431"] {
            #expect(r.stdout.contains(text), "\(text)")
        }
    }

    @Test func aTimeoutOfNothingIsBadInput() throws {
        let r = try CLI.run("serve", "--port", "0", "--header-timeout", "0s")
        #expect(r.status == 2)
        #expect(r.stderr.contains("header timeout"))
    }

    /// A TCP connection held open, saying nothing; -1 when refused.
    static func connection(port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 { close(fd); return -1 }
        return fd
    }

    /// CPU seconds (user + system) the process has used so far.
    static func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.range(of: ")", options: .backwards)!.upperBound...].split(separator: " ")
        // Fields 14 and 15 of stat(5), counted after the command name: utime, stime.
        return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Every server kind: the Supabase-compatible one (Green Box, Survale) and the apps' own (QuickPic, Closer).
    @Test(arguments: ["greenbox", "survale", "quickpic", "closer"])
    func outOfFileDescriptorsItWaitsInsteadOfSpinningAndRecovers(app: String) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keysPath = dir.appendingPathComponent("keys.json").path
        let logPath = dir.appendingPathComponent("serve.log")
        _ = FileManager.default.createFile(atPath: logPath.path, contents: nil)
        let log = try FileHandle(forWritingTo: logPath)
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", #"ulimit -n 64 && exec "$0" serve --app "$2" --port 0 --keys-file "$1""#, CLI.binary.path, keysPath, app]
        process.standardOutput = log
        process.standardError = log
        try process.run()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }

        var deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: keysPath), ContinuousClock.now < deadline, process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        let keys = try #require(try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: keysPath))) as? [String: String])
        let url = try #require(keys["url"])
        let port = try #require(URLComponents(string: url)?.port)

        // More connections than the server has descriptors; the rest wait in the listen queue.
        var hogs: [Int32] = []
        defer { hogs.forEach { close($0) } }
        for _ in 0..<150 {
            let fd = Self.connection(port: port)
            if fd < 0 { break }
            hogs.append(fd)
        }
        // Its descriptors all in use (seen from outside: /proc/PID/fd), the rest wait in the listen queue.
        let pid = process.processIdentifier
        deadline = ContinuousClock.now + .seconds(30)
        var open = 0
        while open < 60, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
        }
        let said = { (try? String(contentsOf: logPath, encoding: .utf8)) ?? "" }
        try #require(open >= 60 && process.isRunning,
                     "the server never ran out: \(open) descriptors, \(hogs.count) connections, running: \(process.isRunning)\n\(said())")

        // Out of descriptors with connections queued, it must not spin: a busy accept loop is a whole core (100 %).
        let (cpu0, wall0) = (try? Self.cpuSeconds(pid), ContinuousClock.now)
        try await Task.sleep(for: .seconds(2))
        let (cpu1, wall1) = (try? Self.cpuSeconds(pid), ContinuousClock.now)
        guard let cpu0, let cpu1 else {
            Issue.record("convoy serve exited while out of descriptors: \(process.isRunning ? "" : "\(process.terminationReason) \(process.terminationStatus)")\n\(said())")
            return
        }
        let share = (cpu1 - cpu0) / Double((wall1 - wall0) / .milliseconds(1)) * 1000
        #expect(share < 0.3, "the server used \(Int(share * 100)) % of a core while out of descriptors")
        #expect(said().contains("out of file descriptors"), "\(said())")

        // Once the hogs go, a normal client is served.
        hogs.forEach { close($0) }
        hogs = []
        // Without credentials: each server kind refuses it in its own way, and any answer is service.
        var request = URLRequest(url: URL(string: url + "/auth/v1/user")!)
        if let anon = keys["anon_key"], !anon.isEmpty { request.setValue(anon, forHTTPHeaderField: "apikey") }
        request.timeoutInterval = 5
        deadline = ContinuousClock.now + .seconds(30)
        var status = 0
        while status == 0, ContinuousClock.now < deadline {
            status = ((try? await URLSession.shared.data(for: request))?.1 as? HTTPURLResponse)?.statusCode ?? 0
            if status == 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(status >= 400 && status < 500, "a normal request after the hogs closed: \(status)\n\(said())")
        #expect(process.isRunning)
    }
}
