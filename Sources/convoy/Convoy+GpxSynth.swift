import ArgumentParser
import ConvoyGeo
import Foundation

extension Convoy.Gpx {
    struct Synth: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "synth",
            abstract: "Generate a synthetic track with plausible kinematics (same seed, same bytes).",
            discussion: """
                One point per second. walk, cycle, drive and transit differ in cruise speed,
                acceleration, block length, and how often they stop and turn (docs/tracks.md).
                """)

        @Option(help: "Mobility profile: \(MobilityProfile.allCases.map(\.rawValue).joined(separator: ", ")).")
        var profile: MobilityProfile

        @Option(help: "How long, e.g. 30m, 1h, 900s.")
        var duration: DurationArgument

        @Option(help: "Random seed.")
        var seed: UInt64 = 1

        @Option(parsing: .unconditional, help: "Start position as lat,lon in degrees (negative values are fine: -33.87,151.21).")
        var origin: GeoPoint = GeoPoint(lat: 46.0511, lon: 14.5051)

        @Option(help: "Time of the first point (ISO 8601, UTC).")
        var start: TimeArgument?

        @Option(name: .customLong("urban-canyon"), help: "A stretch through an urban canyon, START..END from the start (e.g. 5m..8m): high HDOP, few satellites.")
        var urbanCanyon: WindowArgument?

        @Option(help: "Write GPX 1.1 here (default: standard output).")
        var out: String?

        func run() async throws {
            let options = SynthesisOptions(
                profile: profile, duration: duration.seconds, seed: seed, origin: origin,
                start: start?.date ?? SynthesisOptions.defaultStart, urbanCanyon: urbanCanyon?.range)
            let doc = try SyntheticTrack.generate(options)
            guard let out else {
                print(GPXWriter.string(doc), terminator: "")
                return
            }
            try GPXWriter.write(doc, to: out)
            let track = try GPXImport.tracks(from: doc, file: out)[0].track
            print("wrote \(out): \(profile.rawValue), \(track.count) points, \(Format.duration(track.duration)), \(Format.distance(track.distance))")
        }
    }
}
