import ArgumentParser

extension Convoy {
    /// `convoy gpx …`: make, inspect and convert the tracks devices replay.
    struct Gpx: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gpx",
            abstract: "Make, inspect, convert and record tracks (GPX 1.0/1.1, NMEA 0183, gpsd).",
            subcommands: [Synth.self, Inspect.self, Nmea.self, Record.self])
    }
}
