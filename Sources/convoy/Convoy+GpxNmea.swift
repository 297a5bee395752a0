import ArgumentParser
import ConvoyGeo
import Foundation

extension Convoy.Gpx {
    struct Nmea: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "nmea",
            abstract: "Convert between GPX and NMEA 0183: GPX in gives NMEA (GGA, GSA, RMC) for gpsfake; NMEA in gives GPX 1.1.",
            discussion: """
                Example, replaying a track into a real gpsd:
                  convoy gpx nmea gpx/walk-ljubljana.gpx --out /tmp/walk.nmea
                  gpsfake -P 2947 -c 1 /tmp/walk.nmea
                """)

        @Argument(help: "A GPX or NMEA file (told apart by content).")
        var input: String

        @Option(help: "Output file (default: standard output).")
        var out: String?

        @Option(help: "NMEA output: seconds between epochs (at least 0.04); 0 writes one epoch per track point. No epochs are invented inside gaps over 10 s.")
        var interval: Double = 1

        @Option(help: "NMEA output: time of the first epoch (ISO 8601); default the track's own start.")
        var start: TimeArgument?

        @Option(help: "Which track of a multi-track GPX file (1-based).")
        var track: Int = 1

        func run() async throws {
            let file = try TrackFile.load(input)
            _ = try file.replayable()
            guard (1...file.tracks.count).contains(track) else {
                throw CommandFailure.badInput("\(input) has \(file.tracks.count) track(s); --track \(track) is out of range")
            }
            guard interval == 0 || interval >= NMEAWriter.minimumInterval else {
                throw CommandFailure.badInput("--interval must be 0 (one epoch per point) or at least \(NMEAWriter.minimumInterval) s")
            }
            let chosen = file.tracks[track - 1].track
            let text: String
            switch file.format {
            case .gpx:
                text = try NMEAWriter.text(for: chosen, start: start?.date, interval: interval == 0 ? nil : interval)
            case .nmea:
                let points = zip(chosen.times, chosen.points).enumerated().map { i, tp in
                    GPXPoint(position: tp.1, elevation: chosen.elevations[i],
                             time: (chosen.start ?? SynthesisOptions.defaultStart).addingTimeInterval(tp.0),
                             hdop: chosen.hdops[i], satellites: chosen.satellites[i])
                }
                text = GPXWriter.string(GPXDocument(creator: "Convoy gpx nmea", tracks: [GPXTrack(name: chosen.name, segments: [points])]))
            }
            guard let out else {
                print(text, terminator: "")
                return
            }
            do {
                try text.write(toFile: out, atomically: true, encoding: .utf8)
            } catch {
                throw CommandFailure.runtime("cannot write \(out): \(error.localizedDescription)")
            }
            let what = file.format == .gpx ? "NMEA 0183" : "GPX 1.1"
            print("wrote \(out): \(what) from \(chosen.count) point(s) over \(Format.duration(chosen.duration))")
        }
    }
}
