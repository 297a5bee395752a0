import ArgumentParser
import ConvoyGeo
import ConvoyMetrics
import ConvoyServer
import Foundation

/// Durations as people write them: `90`, `90s`, `1500ms`, `30m`, `1h30m`, `2d` (`DurationText`, as scenario keys).
struct DurationArgument: ExpressibleByArgument, Hashable {
    let seconds: Double
    /// As the user wrote it, for `--help`'s defaults.
    let text: String

    init?(argument: String) {
        guard let s = Self.parse(argument) else { return nil }
        seconds = s
        text = argument
    }

    var defaultValueDescription: String { text }

    /// The grammar every scenario key, flag and threshold shares (`DurationText`).
    static func parse(_ text: String) -> Double? { DurationText.seconds(text) }

    static var defaultCompletionKind: CompletionKind { .default }
}

/// Sizes as Supabase Storage writes them: `50MB`, `1.5GB`, `300KB`, `10B` or bytes (`FileSize`).
struct FileSizeArgument: ExpressibleByArgument, Hashable {
    let bytes: Int
    /// As the user wrote it, for `--help`'s defaults.
    let text: String

    init?(argument: String) {
        guard let b = FileSize.bytes(argument) else { return nil }
        bytes = b
        text = argument
    }

    var defaultValueDescription: String { text }
}

/// `lat,lon` in degrees.
extension GeoPoint: ExpressibleByArgument {
    public init?(argument: String) {
        let parts = argument.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let lat = parts[0], let lon = parts[1], abs(lat) <= 90, abs(lon) <= 180 else { return nil }
        self.init(lat: lat, lon: lon)
    }
}

extension MobilityProfile: ExpressibleByArgument {}

/// `START..END` in durations from the track's start, e.g. `5m..8m`.
struct WindowArgument: ExpressibleByArgument, Hashable {
    let range: ClosedRange<Double>

    init?(argument: String) {
        let parts = argument.components(separatedBy: "..")
        guard parts.count == 2, let a = DurationArgument.parse(parts[0]), let b = DurationArgument.parse(parts[1]), a <= b
        else { return nil }
        range = a...b
    }
}

/// ISO 8601 times (`2026-01-05T08:00:00Z`).
struct TimeArgument: ExpressibleByArgument, Hashable {
    let date: Date

    init?(argument: String) {
        guard let d = try? Date.ISO8601FormatStyle().parse(argument) else { return nil }
        date = d
    }
}

/// `convoy serve --app-schema built-in|database`.
extension ServerConfiguration.AppSchema: ExpressibleByArgument {}

/// `--target`: an http(s) URL with a host; anything else is bad input, found
/// before a run starts (not a transport error once devices connect).
enum TargetURL {
    static func problem(_ text: String) -> String? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty
        else {
            return "--target \"\(text)\" is not an http(s) URL with a host (e.g. https://xyz.supabase.co or http://127.0.0.1:3010)"
        }
        return nil
    }
}
