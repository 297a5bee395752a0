import ArgumentParser

extension Convoy {
    /// `convoy gpx …`: make, inspect and convert the tracks devices replay.
    struct Gpx: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gpx",
            abstract: "Make, inspect and convert tracks (GPX 1.0/1.1 and NMEA 0183).",
            subcommands: [Synth.self, Inspect.self, Nmea.self])
    }
}
