import ArgumentParser
import ConvoyGeo
import Foundation
import UnixSignals

extension Convoy.Gpx {
    struct Record: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "record",
            abstract: "Record what a receiver behind gpsd sees into GPX 1.1, for later replay.",
            discussion: """
                Connects to gpsd (reconnecting if it goes away) and records every fix: \
                time, position, elevation when 3-D, fix type, HDOP and satellites when gpsd reports them. \
                One track per receiver; a new segment after a lost connection, a gap over 10 s, or time going back. \
                Stops after --duration, after --fixes, or on SIGINT/SIGTERM, then writes the file. \
                If gpsd cannot be reached it keeps trying; with nothing recorded the exit code is 1.

                Example, a track replayed through a real gpsd and recorded back:
                  gpsfake -P 2947 -n -c 0.1 walk.nmea &
                  convoy gpx record --gpsd 127.0.0.1:2947 --out walk-recorded.gpx --fixes 100
                """)

        @Option(help: "gpsd's address: HOST:PORT, or [IPv6]:PORT (gpsd's own port is 2947).")
        var gpsd: String

        @Option(help: "Write the GPX here (atomically, when recording stops).")
        var out: String

        @Option(help: "Record only this receiver (gpsd's device path, e.g. /dev/ttyUSB0); repeat for several. Default: all.")
        var device: [String] = []

        @Option(help: "Stop after this long, e.g. 90s, 10m.")
        var duration: DurationArgument?

        @Option(help: "Stop after this many fixes (all receivers together).")
        var fixes: Int?

        func run() async throws {
            let address: GPSDAddress
            do {
                address = try GPSDAddress(parsing: gpsd)
            } catch {
                throw CommandFailure.badInput(error.description)
            }
            if let fixes, fixes < 1 { throw CommandFailure.badInput("--fixes must be at least 1") }
            if let duration, duration.seconds <= 0 { throw CommandFailure.badInput("--duration must be longer than 0") }

            let source = GPSDSource(.init(address: address, devices: Set(device)))
            let stream = source.events(buffering: .unbounded)
            let limit = fixes
            let recorder = Task { () -> GPSDRecording in
                var recording = GPSDRecording()
                var warned = false
                for await event in stream {
                    recording.record(event)
                    if case .unreachable(let reason, _) = event, !warned {
                        warned = true
                        FileHandle.standardError.write(Data("convoy: \(reason); retrying\n".utf8))
                    }
                    if let limit, recording.fixes >= limit { break }
                }
                return recording
            }
            let timer = duration.map { d in
                Task {
                    try? await Task.sleep(for: .seconds(d.seconds))
                    recorder.cancel()
                }
            }
            let signals = Task {
                for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) {
                    recorder.cancel()
                    break
                }
            }
            let recording = await recorder.value
            timer?.cancel()
            signals.cancel()
            source.stop()

            guard recording.fixes > 0 else {
                if !recording.everConnected {
                    let last = recording.lastProblem.map { ": \($0)" } ?? ""
                    throw CommandFailure.runtime("nothing recorded: gpsd at \(address) was unreachable (\(recording.failedAttempts) attempt(s))\(last)")
                }
                let filter = device.isEmpty ? "" : " from \(device.joined(separator: ", "))"
                throw CommandFailure.runtime("nothing recorded: gpsd at \(address) sent no fix\(filter) (\(recording.noFix) report(s) without a fix)")
            }
            try GPXWriter.write(recording.document(), to: out)
            print("recorded \(recording.fixes) fix(es) from \(recording.devices.count) receiver(s) to \(out): "
                + "\(recording.noFix) report(s) without a fix skipped, \(recording.reconnects) reconnect(s)")
        }
    }
}
