import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ConvoyTestSupport

/// Runs the built `convoy` binary as a user would and checks what it prints
/// and how it exits (0 ok, 1 runtime failure, 2 bad input, 99 thresholds).
struct CLI {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// `convoy` sits beside the test bundle in the build products folder.
    static let binary: URL = {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("convoy")
    }()

    static func run(_ arguments: String...) throws -> Result { try run(arguments) }

    /// `run` on a thread of its own: an async test that waits for a long command this way does not hold
    /// one of the few threads (one per core) every other async test needs meanwhile.
    static func detached(_ arguments: String...) async throws -> Result { try await detached(arguments) }

    static func detached(_ arguments: [String]) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Swift.Result { try run(arguments) }) }.start()
        }
    }

    static func run(_ arguments: [String]) throws -> Result { try runTool(binary.path, arguments) }

    /// `convoy` started and left running (standard output discarded): the process, and a watch on what it prints on
    /// standard error (the dashboard's address, say).
    static func start(_ arguments: [String]) throws -> (TestProcess, OutputWatch) {
        let p = TestProcess()
        p.executableURL = binary
        p.arguments = arguments
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        return (p, OutputWatch(err))
    }

    /// A scenario of four phones sharing every second or so for ten minutes, written into `dir`: a run to stop.
    static func longScenario(in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("long.yaml").path
        try """
            name: long
            groups:
              - name: g
                count: 4
                cadence: 600ms..900ms
            social: { friends: 1..2 }
            timeline: { arrival_rate: 40/s, steady: 10m }
            thresholds: [decrypt_failures == 0]
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Another program (psql, say), run the same way.
    static func runTool(_ path: String, _ arguments: [String]) throws -> Result {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                      stderr: String(decoding: e, as: UTF8.self))
    }
}

/// Whether `text` holds something shaped like a JWT (`eyJ…`-header, a dot, a payload, a dot): a bare
/// "eyJ" also turns up by chance in Base64 ciphertexts that probes print as evidence.
func containsJWT(_ text: String) -> Bool {
    text.range(of: #"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\."#, options: .regularExpression) != nil
}

func temporaryDirectory() throws -> URL {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-cli-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir
}

let sharedData = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/data")
let sharedAvailable = FileManager.default.fileExists(atPath: sharedData.appendingPathComponent("gpx/cerknicko-jezero.gpx").path)

@Suite struct CLITests {
    @Test func versionNamesTheLibraries() throws {
        let r = try CLI.run("--version")
        #expect(r.status == 0)
        #expect(r.stdout.contains("convoy 0.1.0"))
        #expect(r.stdout.contains("libsodium 1."))
        #expect(r.stdout.contains("libcurl"))
        #expect(r.stdout.contains("libgps API"))
    }

    @Test func helpSucceedsAndUsageErrorsAreBadInput() throws {
        let help = try CLI.run("gpx", "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("synth") && help.stdout.contains("inspect") && help.stdout.contains("nmea"))
        let unknown = try CLI.run("gpx", "synth", "--profile", "teleport", "--duration", "1m")
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("teleport"))
        let badDuration = try CLI.run("gpx", "synth", "--profile", "walk", "--duration", "soon")
        #expect(badDuration.status == 2)
        #expect(try CLI.run("no-such-command").status == 2)
    }

    @Test func synthIsByteIdenticalForASeedAndInspectReadsIt() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appendingPathComponent("a.gpx").path, b = dir.appendingPathComponent("b.gpx").path
        for path in [a, b] {
            let r = try CLI.run("gpx", "synth", "--profile", "cycle", "--duration", "10m", "--seed", "42", "--out", path)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("601 points"))
        }
        #expect(FileManager.default.contents(atPath: a) == FileManager.default.contents(atPath: b))

        let inspect = try CLI.run("gpx", "inspect", a, "--json")
        #expect(inspect.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any])
        let files = try #require(json["files"] as? [[String: Any]])
        let track = try #require((files.first?["tracks"] as? [[String: Any]])?.first)
        #expect(track["points"] as? Int == 601)
        #expect(track["duration"] as? Double == 600)
    }

    @Test func badInputNamesFileLineAndColumnAndExitsTwo() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = dir.appendingPathComponent("bad.gpx")
        try Data("""
        <?xml version="1.0"?>
        <gpx version="1.1" creator="x">
          <trk><trkseg>
            <trkpt lat="46.1" lon="east"/>
          </trkseg></trk>
        </gpx>
        """.utf8).write(to: bad)
        let r = try CLI.run("gpx", "inspect", bad.path)
        #expect(r.status == 2)
        #expect(r.stderr.contains("bad.gpx:4:"))
        #expect(r.stderr.contains("lon"))
        #expect(r.stdout.isEmpty)

        let missing = try CLI.run("gpx", "inspect", dir.appendingPathComponent("nope.gpx").path)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("nope.gpx"))

        let text = dir.appendingPathComponent("notes.txt")
        try Data("hello".utf8).write(to: text)
        let neither = try CLI.run("gpx", "inspect", text.path)
        #expect(neither.status == 2)
        #expect(neither.stderr.contains("neither GPX"))
    }

    @Test func unwritableOutputIsARuntimeFailureAndAbsurdOptionsAreBadInput() throws {
        let synth = try CLI.run("gpx", "synth", "--profile", "walk", "--duration", "1m", "--out", "/nonexistent/dir/x.gpx")
        #expect(synth.status == 1, "\(synth.stderr)")
        #expect(synth.stderr.contains("/nonexistent/dir/x.gpx"))

        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let two = dir.appendingPathComponent("two.gpx")
        try Data(#"<gpx version="1.1"><trk><trkseg><trkpt lat="1" lon="1"/><trkpt lat="1.01" lon="1"/></trkseg></trk></gpx>"#.utf8).write(to: two)
        let slow = try CLI.run("gpx", "inspect", two.path, "--fallback-speed", "1e-20")
        #expect(slow.status == 2, "\(slow.stderr)")
        #expect(slow.stderr.contains("fallback"))
        let tiny = try CLI.run("gpx", "nmea", two.path, "--interval", "1e-9")
        #expect(tiny.status == 2)
    }

    /// `gpx inspect` says when a track's times are placeholders squeezed into a moment, and warns about
    /// each step faster than `--max-speed`; a max speed below the fallback speed is bad input.
    @Test func inspectReadsSqueezedTimesAsUntimedAndWarnsAboutJumps() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let squeezed = dir.appendingPathComponent("squeezed.gpx")
        let points = (0..<184).map { i in
            let time = i == 7 ? "1901-12-13T20:45:52.0004Z" : "1901-12-13T20:45:52.000Z"
            return #"<trkpt lat="\#(46 + Double(i) * 0.0002)" lon="14"><time>\#(time)</time></trkpt>"#
        }.joined()
        try Data(#"<gpx version="1.1"><trk><trkseg>\#(points)</trkseg></trk></gpx>"#.utf8).write(to: squeezed)
        let r = try CLI.run("gpx", "inspect", squeezed.path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("placeholders, read as untimed"), "\(r.stdout)")
        #expect(!r.stdout.contains("warning"), "\(r.stdout)")

        let jump = dir.appendingPathComponent("jump.gpx")
        try Data(#"<gpx version="1.1"><trk><trkseg><trkpt lat="46" lon="14"><time>2020-01-01T00:00:00Z</time></trkpt><trkpt lat="46.0001" lon="14"><time>2020-01-01T00:00:10Z</time></trkpt><trkpt lat="46.1" lon="14"><time>2020-01-01T00:00:20Z</time></trkpt><trkpt lat="46.1001" lon="14"><time>2020-01-01T00:10:20Z</time></trkpt></trkseg></trk></gpx>"#.utf8).write(to: jump)
        let warned = try CLI.run("gpx", "inspect", jump.path)
        #expect(warned.status == 0, "\(warned.stderr)")
        #expect(warned.stdout.contains("warning    1 step(s) faster than"), "\(warned.stdout)")
        let json = try CLI.run("gpx", "inspect", jump.path, "--json")
        #expect(json.stdout.contains(#""stepsOverCeiling" : 1"#), "\(json.stdout)")
        let slow = try CLI.run("gpx", "inspect", jump.path, "--max-speed", "0.5")
        #expect(slow.status == 2 && slow.stderr.contains("--max-speed"), "\(slow.stderr)")
    }

    @Test func nmeaConversionBothWays() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let track = dir.appendingPathComponent("walk.gpx").path
        let nmea = dir.appendingPathComponent("walk.nmea").path
        let back = dir.appendingPathComponent("back.gpx").path
        #expect(try CLI.run("gpx", "synth", "--profile", "walk", "--duration", "2m", "--out", track).status == 0)
        let toNMEA = try CLI.run("gpx", "nmea", track, "--out", nmea)
        #expect(toNMEA.status == 0, "\(toNMEA.stderr)")
        let text = try String(contentsOfFile: nmea, encoding: .utf8)
        #expect(text.components(separatedBy: "\r\n").filter { $0.hasPrefix("$GPRMC") }.count == 121)
        let toGPX = try CLI.run("gpx", "nmea", nmea, "--out", back)
        #expect(toGPX.status == 0, "\(toGPX.stderr)")
        let inspect = try CLI.run("gpx", "inspect", back)
        #expect(inspect.stdout.contains("points     121"))
    }

    @Test(.enabled(if: sharedAvailable, "../shared/data is absent"))
    func inspectsTheRealTrackAndCaptures() throws {
        let r = try CLI.run("gpx", "inspect", sharedData.appendingPathComponent("gpx/cerknicko-jezero.gpx").path,
                            sharedData.appendingPathComponent("nmea/haicom-305N.log").path)
        #expect(r.status == 0)
        #expect(r.stdout.contains("track 7 of 7"))
        #expect(r.stdout.contains("waypoints  7"))
        #expect(r.stdout.contains("epoch(s) without fix"))
    }
}

/// The tracks in gpx/ are exactly what `convoy gpx synth` makes from gpx/tracks.tsv.
@Suite struct ShippedTracksTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static let manifest: [[String]] = {
        let text = (try? String(contentsOf: root.appendingPathComponent("gpx/tracks.tsv"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.components(separatedBy: "\t") }
    }()

    @Test func manifestListsAtLeastSixTracksAcrossAllProfilesWithACanyon() {
        #expect(Self.manifest.count >= 6)
        #expect(Set(Self.manifest.map { $0[1] }) == ["walk", "cycle", "drive", "transit"])
        #expect(Self.manifest.contains { $0[5] != "-" })
    }

    @Test(arguments: manifest.map { $0[0] })
    func shippedTrackRegeneratesByteForByte(file: String) throws {
        let row = try #require(Self.manifest.first { $0[0] == file })
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent(file).path
        var args = ["gpx", "synth", "--profile", row[1], "--duration", row[2], "--seed", row[3], "--origin", row[4], "--out", out]
        if row[5] != "-" { args += ["--urban-canyon", row[5]] }
        let r = try CLI.run(args)
        #expect(r.status == 0, "\(r.stderr)")
        let shipped = FileManager.default.contents(atPath: Self.root.appendingPathComponent("gpx/\(file)").path)
        #expect(shipped != nil && FileManager.default.contents(atPath: out) == shipped, "gpx/\(file) differs: run scripts/make-tracks")
    }
}

@Suite struct ServeCommandTests {
    /// `convoy serve --port 0 --keys-file F`: keys file 0600 with a live URL,
    /// SIGTERM stops it cleanly with exit 0.
    @Test func servesWritesKeysAndStopsOnSIGTERM() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keysPath = dir.appendingPathComponent("keys.json").path
        let process = TestProcess()
        process.executableURL = CLI.binary
        process.arguments = ["serve", "--port", "0", "--keys-file", keysPath, "--purge-every", "0"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = Pipe()
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // Wait (bounded) for the keys file: readiness, not timing.
        let deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: keysPath), ContinuousClock.now < deadline, process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        let keys = try #require(try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: keysPath))) as? [String: String])
        let mode = try FileManager.default.attributesOfItem(atPath: keysPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let url = try #require(keys["url"])
        #expect(url.hasPrefix("http://127.0.0.1:") && !url.hasSuffix(":0"))

        var request = URLRequest(url: URL(string: url + "/rest/v1/users")!)
        request.setValue(keys["anon_key"], forHTTPHeaderField: "apikey")
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        process.terminate()  // SIGTERM
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(printed.contains("listening on \(url)"))
    }

    /// Start-up failures stop `convoy serve` at once, naming what failed: a
    /// keys file in a folder that is not there (bad input), a port in use.
    @Test func startUpFailuresExitNamingThePathOrPort() throws {
        let missing = "/tmp/convoy-no-such-folder-\(UUID().uuidString)/keys.json"
        let keys = try CLI.run("serve", "--port", "0", "--keys-file", missing)
        #expect(keys.status == 2 && keys.stderr.contains("convoy-no-such-folder") && keys.stderr.contains("does not exist"), "\(keys.stderr)")
        #expect(keys.stdout.isEmpty, "nothing is served")
        // A port someone else holds.
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(holder, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0 && listen(holder, 1) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(holder, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let taken = try CLI.run("serve", "--port", String(port), "--purge-every", "0")
        #expect(taken.status == 1 && taken.stderr.contains("cannot listen on 127.0.0.1:\(port): the port is in use"), "\(taken.stderr)")
    }

    /// A --target that is not an http(s) URL is bad input before anything starts, not a transport failure later.
    @Test func aMalformedTargetIsBadInput() throws {
        let scenario = ShippedTracksTests.root.appendingPathComponent("scenarios/smoke.yaml").path
        for bad in ["not a url", "ftp://x", "http//missing-colon", "https://"] {
            let run = try CLI.run("run", scenario, "--target", bad, "--anon-key", "k")
            #expect(run.status == 2 && run.stderr.contains("is not an http(s) URL"), "\(bad): \(run.stderr)")
        }
        let probe = try CLI.run("probe", ShippedTracksTests.root.appendingPathComponent("probes/greenbox.yaml").path, "--target", "ftp://x", "--anon-key", "k")
        #expect(probe.status == 2 && probe.stderr.contains("is not an http(s) URL"), "\(probe.stderr)")
    }

    @Test func badServeOptionsAreBadInput() throws {
        #expect(try CLI.run("serve", "--port", "70000").status == 2)
        #expect(try CLI.run("serve", "--password-cost", "extreme").status == 2)
        let forever = try CLI.run("serve", "--port", "0", "--token-ttl", "99999999999999999999s")
        #expect(forever.status == 2 && forever.stderr.contains("token TTL"), "\(forever.stderr)")
        let short = try CLI.run("serve", "--jwt-secret", "short")
        #expect(short.status == 2 && short.stderr.contains("at least 32 bytes"))
        let sqliteMigrations = try CLI.run("serve", "--port", "0", "--migrations", "/tmp")
        #expect(sqliteMigrations.status == 2 && sqliteMigrations.stderr.contains("needs a PostgreSQL database"), "\(sqliteMigrations.stderr)")
        let badSSL = try CLI.run("serve", "--port", "0", "--database", "postgres://u@127.0.0.1:1/db?sslmode=sometimes")
        #expect(badSSL.status == 2 && badSSL.stderr.contains("sslmode"), "\(badSSL.stderr)")
    }

    /// `--app` picks the app the server serves; a name that is not one is bad
    /// input, and the message lists the apps there are.
    @Test func anUnknownAppIsBadInputAndTheAppsAreListed() throws {
        let unknown = try CLI.run("serve", "--port", "0", "--app", "survalle")
        #expect(unknown.status == 2, "\(unknown.stderr)")
        #expect(unknown.stderr.contains("--app") && unknown.stderr.contains("'survalle'") && unknown.stderr.contains("greenbox"),
                "\(unknown.stderr)")
        #expect(unknown.stdout.isEmpty, "nothing is served")
        let help = try CLI.run("serve", "--help")
        #expect(help.status == 0 && help.stdout.contains("--app <name>") && help.stdout.contains("greenbox"), "\(help.stdout)")
    }

    /// A PostgreSQL server that is not there is a runtime failure (exit 1) that
    /// names the URL without its password.
    @Test func anUnreachableDatabaseIsARuntimeFailure() throws {
        let r = try CLI.run("serve", "--port", "0", "--database", "postgres://convoy:hunter2@127.0.0.1:1/convoy?sslmode=disable")
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("cannot connect to postgres://convoy:***@127.0.0.1:1/convoy"), "\(r.stderr)")
        #expect(!r.stderr.contains("hunter2"), "the password is not printed")
    }
}
