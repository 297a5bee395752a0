import ConvoyTestSupport
import Foundation
import Testing
@testable import ConvoyGeo

/// `GPSDSource` against a real gpsd: gpsfake replays NMEA (Convoy's own, and
/// real receiver captures) into it on a free port. No timing assertions: every
/// wait is for a condition, with a deadline.
// One gpsfake at a time: several python replays at once starve the rest of the suite on 2 cores.
@Suite(.serialized, .enabled(if: GPSFake.available || GPSFake.required, GPSFake.skipMessage), .timeLimit(.minutes(5)))
struct GPSDLiveTests {
    typealias Event = GPSDSource.Event
    /// GPS week rollover: old receivers' dates come back 1024 weeks late.
    static let rollover = 1024.0 * 7 * 86_400

    static func source(_ fake: GPSFake, devices: Set<String> = []) -> GPSDSource {
        GPSDSource(.init(address: GPSDAddress(host: "127.0.0.1", port: fake.port), devices: devices,
                         pollInterval: 0.05, initialBackoff: 0.1, maximumBackoff: 0.5))
    }

    /// Reads `stream` until `done(events so far)` or `timeout` seconds.
    static func collect(_ stream: AsyncStream<Event>, timeout: Double,
                        until done: @escaping @Sendable ([Event]) -> Bool) async -> [Event] {
        let reader = Task {
            var seen: [Event] = []
            for await e in stream {
                seen.append(e)
                if done(seen) { break }
            }
            return seen
        }
        let timer = Task {
            try? await Task.sleep(for: .seconds(timeout))
            reader.cancel()
        }
        let seen = await reader.value
        timer.cancel()
        return seen
    }

    static func fixes(_ events: [Event]) -> [GPSDFix] {
        events.compactMap { if case .fix(let f) = $0 { f } else { nil } }
    }

    /// Fixes until gpsfake's loop has come round once: time went back, then
    /// reached the first time seen again (every epoch seen at least once).
    static func oneLoop(_ events: [Event]) -> Bool {
        let f = fixes(events)
        guard let first = f.first?.time, let wrap = f.indices.dropLast().first(where: { f[$0 + 1].time < f[$0].time }) else { return false }
        return f[(wrap + 1)...].contains { $0.time >= first }
    }

    @Test func aTrackWrittenAsNMEARoundTripsThroughGPSD() async throws {
        #expect(GPSFake.available, "gpsfake is required (CONVOY_REQUIRE_GPSD=1)")
        let path = SharedData.available ? SharedData.path("gpx/cerknicko-jezero.gpx")
            : URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("gpx/walk-ljubljana.gpx").path
        let file = try TrackFile.load(path)
        let track = try #require(file.tracks.max { $0.track.count < $1.track.count }?.track)
        #expect(track.count > 50)
        // A recent start: gpsd would take a date more than 1024 weeks old for a rollover.
        let start = SynthesisOptions.defaultStart
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-gpsd-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let nmea = dir.appendingPathComponent("track.nmea")
        try NMEAWriter.text(for: track, start: start, interval: nil).write(to: nmea, atomically: true, encoding: .utf8)

        // Expected: each point at its time, in centiseconds as NMEA carries it.
        var expected: [Int: Int] = [:]
        for (i, t) in track.times.enumerated() { expected[Int(((start.timeIntervalSince1970 + t) * 100).rounded())] = i }
        let fake = try GPSFake([nmea.path], cycle: 0.004)
        try await fake.waitUntilListening()
        let source = Self.source(fake)
        let keys = Set(expected.keys)
        let events = await Self.collect(source.events(), timeout: 120) { events in
            keys.isSubset(of: Set(Self.fixes(events).map { Int(($0.time * 100).rounded()) }))
        }
        source.stop()
        await fake.stop()

        let fixes = Self.fixes(events)
        var seen = Set<Int>()
        var worst = 0.0
        for fix in fixes {
            let key = Int((fix.time * 100).rounded())
            let i = try #require(expected[key], "gpsd reported a fix at \(fix.date), which the track does not have")
            #expect(abs(fix.time - (start.timeIntervalSince1970 + track.times[i])) < 0.006)
            let d = fix.position.distance(to: track.points[i])
            worst = max(worst, d)
            #expect(d <= 0.02, "point \(i): \(d) m from the source")
            if let ele = track.elevations[i] {
                #expect(fix.mode == .threeD)
                #expect(abs((fix.altitude ?? .nan) - ele) <= 0.051, "point \(i): altitude \(fix.altitude ?? .nan) vs \(ele)")
            }
            seen.insert(key)
        }
        #expect(seen == keys, "\(keys.count - seen.count) of \(keys.count) epochs never came back from gpsd")
        #expect(worst > 0, "positions carry NMEA's rounding")
    }

    /// Real receivers: gpsd's fixes against Convoy's own NMEA reader on the same capture.
    @Test(.enabled(if: SharedData.available, SharedData.skipMessage),
          arguments: [("nmea/bundg_zeus_9.log", 0.002), ("nmea/haicom-305N.log", 0.01)])
    func realCapturesAgreeWithConvoysNMEAReader(capture: String, cycle: Double) async throws {
        #expect(GPSFake.available, "gpsfake is required (CONVOY_REQUIRE_GPSD=1)")
        let log = try NMEAReader.read(contentsOf: SharedData.path(capture))
        let rollover = Self.rollover
        func key(_ t: Double) -> Int { Int((t.truncatingRemainder(dividingBy: rollover) * 10).rounded()) }
        var expected: [Int: NMEAFix] = [:]
        for f in log.fixes { expected[key(f.time.timeIntervalSince1970)] = f }

        let fake = try GPSFake([SharedData.path(capture)], cycle: cycle)
        try await fake.waitUntilListening()
        let source = Self.source(fake)
        let events = await Self.collect(source.events(), timeout: 120, until: Self.oneLoop)
        source.stop()
        await fake.stop()

        let fixes = Self.fixes(events)
        #expect(Self.oneLoop(events), "gpsfake's loop did not come round within the deadline")
        let distinct = Set(fixes.map { key($0.time) })
        #expect(Double(distinct.count) >= 0.9 * Double(log.fixes.count), "\(distinct.count) fixes from gpsd, \(log.fixes.count) in the capture")
        #expect(distinct.count <= log.fixes.count + 2)
        let start = fixes.map(\.time).min() ?? 0
        var matched = 0
        for (a, b) in zip(fixes, fixes.dropFirst()) {
            #expect(b.time > a.time || b.time - start < 60, "time went back from \(a.date) to \(b.date) other than at the loop")
        }
        for fix in fixes {
            let eph = try #require(fix.eph, "gpsd estimates eph for NMEA receivers")
            let factor = GPSDReport.eph95To68 * (fix.mode == .twoD ? GPSDReport.twoDFactor : 1)
            #expect(abs(fix.accuracy68 - eph * factor) < 1e-9)
            guard let nmea = expected[key(fix.time)] else { continue }
            matched += 1
            let d = fix.position.distance(to: nmea.position)
            #expect(d < 5, "\(fix.date): \(d) m from the capture's own fix")
        }
        #expect(Double(matched) >= 0.95 * Double(fixes.count), "\(matched) of \(fixes.count) fixes at a time the capture has")
    }

    /// A process holding thousands of phones' connections gets descriptors
    /// past select(2)'s 1024 for gpsd (connected late, or again): fixes still
    /// arrive (libgps's own wait, select, made glibc abort the whole process).
    @Test func gpsdOnADescriptorPast1024StillDelivers() async throws {
        #expect(GPSFake.available, "gpsfake is required (CONVOY_REQUIRE_GPSD=1)")
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try #require(limit.rlim_max >= 1300, "RLIMIT_NOFILE's hard limit \(limit.rlim_max) is too low to hold 1,100 descriptors")
        if limit.rlim_cur < 1300 {
            var raised = limit
            raised.rlim_cur = min(limit.rlim_max, 4096)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
        }
        defer { setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) }
        // Fill the low descriptors, so gpsd's socket is numbered past 1024.
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        while held.count < 1100 {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)  // not inherited: gpsd itself waits with select
            try #require(fd >= 0, "open: \(String(cString: strerror(errno)))")
            held.append(fd)
        }
        try #require(held.last! >= 1024, "descriptors are not past 1024 (\(held.last!))")
        let nmea = try Self.shortTrackNMEA()
        defer { try? FileManager.default.removeItem(atPath: nmea) }
        let fake = try GPSFake([nmea], cycle: 0.01)
        try await fake.waitUntilListening()
        let source = Self.source(fake)
        let events = await Self.collect(source.events(), timeout: 60) { Self.fixes($0).count >= 5 }
        source.stop()
        await fake.stop()
        #expect(Self.fixes(events).count >= 5, "\(events.prefix(5))")
    }

    @Test func reconnectsWhenGPSDGoesAwayAndComesBack() async throws {
        #expect(GPSFake.available, "gpsfake is required (CONVOY_REQUIRE_GPSD=1)")
        let nmea = try Self.shortTrackNMEA()
        defer { try? FileManager.default.removeItem(atPath: nmea) }
        let first = try GPSFake([nmea], cycle: 0.01)
        try await first.waitUntilListening()
        let source = Self.source(first)
        let stream = source.events()
        var iterator = stream.makeAsyncIterator()
        func next(_ what: String, _ match: (Event) -> Bool) async throws {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                let e = try #require(await iterator.next(), "the stream ended while waiting for \(what)")
                if match(e) { return }
            }
            Issue.record("no \(what) within the deadline")
        }
        try await next("a first connection") { if case .connected = $0 { true } else { false } }
        try await next("a first fix") { if case .fix = $0 { true } else { false } }
        await first.stop()
        try await next("a disconnect") { if case .disconnected = $0 { true } else { false } }
        let second = try GPSFake([nmea], port: first.port, cycle: 0.01)
        try await second.waitUntilListening()
        try await next("a reconnection") { if case .connected = $0 { true } else { false } }
        try await next("a fix after reconnecting") { if case .fix = $0 { true } else { false } }
        source.stop()
        await second.stop()
        // stop() ends the stream: what was buffered comes out, then the end.
        while await iterator.next() != nil {}
    }

    /// The helper's readiness: gpsd lists each replayed log as a device once `waitUntilListening` returns,
    /// and a port nobody listens on lists none.
    @Test func gpsfakeIsReadyWhenGPSDListsEveryLog() async throws {
        #expect(GPSFake.available, "gpsfake is required (CONVOY_REQUIRE_GPSD=1)")
        let a = try Self.shortTrackNMEA(origin: GeoPoint(lat: 46, lon: 14))
        let b = try Self.shortTrackNMEA(origin: GeoPoint(lat: 45, lon: 13))
        defer { for p in [a, b] { try? FileManager.default.removeItem(atPath: p) } }
        let fake = try GPSFake([a, b], cycle: 0.01)
        try await fake.waitUntilListening()
        #expect(GPSFake.devices(port: fake.port) == 2)
        await fake.stop()
        #expect(GPSFake.devices(port: fake.port) == 0)
    }

    @Test func severalReceiversAreToldApartByDevicePath() async throws {
        #expect(GPSFake.available, "gpsfake is required (CONVOY_REQUIRE_GPSD=1)")
        let north = try Self.shortTrackNMEA(origin: GeoPoint(lat: 46, lon: 14))
        let south = try Self.shortTrackNMEA(origin: GeoPoint(lat: -33.9, lon: 151.2))
        defer { for p in [north, south] { try? FileManager.default.removeItem(atPath: p) } }
        let fake = try GPSFake([north, south], cycle: 0.01)
        try await fake.waitUntilListening()
        let all = Self.source(fake)
        let events = await Self.collect(all.events(), timeout: 60) { Set(Self.fixes($0).map(\.device)).count == 2 }
        all.stop()
        let fixes = Self.fixes(events)
        let southern = try #require(fixes.first { $0.position.lat < 0 }?.device, "no fix from the southern receiver")
        #expect(all.latest(device: southern)?.position.lat ?? 0 < 0)
        #expect(all.devices.count == 2)

        let one = Self.source(fake, devices: [southern])
        let only = await Self.collect(one.events(), timeout: 60) { Self.fixes($0).count >= 10 }
        one.stop()
        await fake.stop()
        #expect(Self.fixes(only).count >= 10)
        #expect(Self.fixes(only).allSatisfy { $0.device == southern && $0.position.lat < 0 })
    }

    @Test func anUnreachableGPSDIsRetriedAndStopEndsTheStream() async throws {
        let port = try GPSFake.freePort()
        let source = GPSDSource(.init(address: GPSDAddress(host: "127.0.0.1", port: port), pollInterval: 0.05,
                                      initialBackoff: 0.05, maximumBackoff: 0.2))
        let events = await Self.collect(source.events(), timeout: 30) { $0.count >= 3 }
        #expect(events.count == 3)
        for e in events {
            guard case .unreachable(let reason, let retry) = e else {
                Issue.record("expected only failed attempts, got \(e)")
                continue
            }
            #expect(reason.contains("127.0.0.1:\(port)") && retry <= 0.2)
        }
        source.stop()
        var after = source.events().makeAsyncIterator()
        #expect(await after.next() == nil)
    }

    /// A 60-point walk as NMEA in a temporary file (one epoch a second, with altitude).
    static func shortTrackNMEA(origin: GeoPoint = GeoPoint(lat: 46, lon: 14)) throws -> String {
        let track = try TimedTrack(name: "short", times: (0..<60).map(Double.init),
                                   points: (0..<60).map { origin.offset(north: Double($0) * 1.4, east: 0) },
                                   elevations: Array(repeating: 300, count: 60))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-short-\(UUID()).nmea").path
        try NMEAWriter.text(for: track, start: SynthesisOptions.defaultStart, interval: nil)
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
