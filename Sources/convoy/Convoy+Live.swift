import ArgumentParser
import ConvoyFleet
import ConvoyGeo
import Foundation

extension Convoy {
    /// `convoy live --gpsd HOST:PORT [SCENARIO] [run flags]`: devices fed by a real receiver.
    struct Live: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run devices fed live from gpsd, alone or among a scenario's virtual devices.",
            discussion: """
                The devices of the scenario's live group (--live-group, default "live") share the newest fix \
                of a receiver behind gpsd on their cadence, as the receiver reports it (its own error, and \
                its accuracy converted from gpsd's 95 % figure to a 68 % radius; docs/gpsd.md), instead of \
                replaying a track; everything else is `convoy run`: onboarding, pairing, sharing to and from \
                the scenario's virtual devices, the same measurements, results, thresholds and exit codes. \
                With several --receiver paths, the live group's devices take them in turn; without, every \
                receiver feeds them. A fix that came in longer than --max-fix-age ago (by this machine's clock) is not shared (live_no_fix).

                Without --scenario: one live device among three virtual walkers, friends with each other, for \
                --duration (default 10m) on the embedded backend; Ctrl-C stops it gracefully.

                Every other flag goes to convoy run: --target, --keys-file, --out, --duration, --seed, --devices, \
                --keep-roster, --metrics-listen, ….
                """)

        @Option(help: ArgumentHelp("gpsd's address.", valueName: "host:port"))
        var gpsd: String

        @Option(name: .customLong("receiver"), help: ArgumentHelp("A receiver's device path as gpsd names it (repeat for several).", valueName: "path"))
        var receivers: [String] = []

        @Option(name: .customLong("live-group"), help: "The scenario's group whose devices the receivers feed.")
        var liveGroup = "live"

        @Option(name: .customLong("max-fix-age"), help: "Share a fix only this long after it came in.")
        var maxFixAge: DurationArgument = DurationArgument(argument: "10s")!

        @Option(help: ArgumentHelp("A scenario with a live group (docs/scenarios.md); default: one live device and three walkers.", valueName: "file"))
        var scenario: String?

        @Argument(parsing: .allUnrecognized, help: "convoy run's flags (--target, --keys-file, --out, --duration, …).")
        var runFlags: [String] = []

        func validate() throws {
            do {
                _ = try GPSDAddress(parsing: gpsd, key: "--gpsd")
            } catch {
                throw ValidationError("\(error)")
            }
            if receivers.contains(where: \.isEmpty) { throw ValidationError("--receiver is a device path, e.g. /dev/ttyUSB0") }
        }

        /// The scenario without SCENARIO.
        static let defaultScenario = """
            # convoy live without a scenario: one device fed by the receiver, three virtual walkers.
            name: live
            seed: 1
            target: embedded
            groups:
              - name: live
                count: 1
                tracks: { synthetic: walk }
                cadence: 5s
              - name: walkers
                count: 3
                tracks: { synthetic: walk }
                cadence: 5s..10s
            social:
              friends: 3..3
            timeline:
              arrival_rate: 4/s
              steady: 10m
              ramp_down: 0s
            thresholds:
              - delivery.loss < 1%
            """

        func run() async throws {
            let address: GPSDAddress
            do {
                address = try GPSDAddress(parsing: gpsd, key: "--gpsd")
            } catch {
                throw CommandFailure.badInput("\(error)")
            }
            var path = scenario
            var temporary: URL?
            if path == nil {
                let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-live-\(getpid())")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                let file = dir.appendingPathComponent("live.yaml")
                try Data(Self.defaultScenario.utf8).write(to: file)
                (path, temporary) = (file.path, dir)
            }
            defer { if let temporary { try? FileManager.default.removeItem(at: temporary) } }
            var run: Run
            do {
                run = try Run.parse([path!] + runFlags)
            } catch {
                throw CommandFailure.badInput(Run.message(for: error))
            }

            // One feed per receiver (or one for all), filled from gpsd for as long as the run lasts.
            let feeds = receivers.isEmpty ? [LiveFeed(name: "any", maxAge: maxFixAge.seconds)]
                : receivers.map { LiveFeed(name: $0, maxAge: maxFixAge.seconds) }
            let source = GPSDSource(.init(address: address, devices: Set(receivers)))
            let stream = source.events()
            let reader = Task {
                for await event in stream {
                    switch event {
                    case .fix(let fix):
                        let live = LiveFeed.Fix(position: fix.position, accuracy: fix.accuracy68, time: fix.time)
                        let now = Date().timeIntervalSince1970
                        for feed in feeds where feed.name == "any" || feed.name == fix.device { feed.update(live, at: now) }
                    case .connected(let a):
                        FileHandle.standardError.write(Data("convoy: gpsd \(a): connected\n".utf8))
                    case .disconnected(let reason):
                        FileHandle.standardError.write(Data("convoy: gpsd \(address): lost (\(reason)); reconnecting\n".utf8))
                    case .unreachable(let reason, let retry):
                        FileHandle.standardError.write(Data("convoy: gpsd \(address): \(reason); again in \(String(format: "%.1f", retry)) s\n".utf8))
                    case .noFix:
                        break
                    }
                }
            }
            defer {
                reader.cancel()
                source.stop()
            }
            try await LiveRun.$setup.withValue(LiveSetup(group: liveGroup, feeds: feeds)) {
                try await run.run()
            }
        }
    }
}
