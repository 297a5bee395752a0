import ConvoyGeo
import Foundation

/// The tracks a run's devices replay. A group's devices share a handful of
/// tracks (synthetic, or the group's GPX files), each device at its own
/// offset, so ten thousand devices cost a few tracks of memory.
public struct TrackLibrary: Sendable {
    /// Tracks per group, in the scenario's group order.
    public let tracks: [[TimedTrack]]

    /// Synthetic tracks generated per group: enough variety, bounded memory.
    public static let syntheticPerGroup = 16
    /// Where synthetic tracks start (Ljubljana, as `convoy gpx synth` does), spread over a few kilometres.
    public static let origin = GeoPoint(lat: 46.0511, lon: 14.5051)

    /// Builds every group's tracks. `length` is how long a device may replay
    /// (synthetic tracks are that long, at most 4 h, and loop beyond it);
    /// track files are found relative to the scenario `file`'s folder.
    public static func build(_ scenario: Scenario, file: String, length: Double) throws(ScenarioError) -> TrackLibrary {
        let directory = (file as NSString).deletingLastPathComponent.isEmpty ? "." : (file as NSString).deletingLastPathComponent
        var out: [[TimedTrack]] = []
        for (g, group) in scenario.groups.enumerated() {
            switch group.tracks {
            case .synthetic(let profile):
                var rng = SeededGenerator(seed: scenario.seed, stream: 0x7AC0 + UInt64(g))
                var tracks: [TimedTrack] = []
                for k in 0..<min(group.count, syntheticPerGroup) {
                    let origin = origin.offset(north: rng.uniform(-3000, 3000), east: rng.uniform(-3000, 3000))
                    let options = SynthesisOptions(profile: profile, duration: min(max(length, 600), 4 * 3600),
                                                   seed: scenario.seed &+ UInt64(g) << 32 &+ UInt64(k), origin: origin)
                    do {
                        let doc = try SyntheticTrack.generate(options)
                        tracks.append(try GPXImport.tracks(from: doc, file: "synthetic \(profile.rawValue) #\(k + 1)")[0].track)
                    } catch {
                        throw ScenarioError(file: file, line: group.tracksLine, column: group.tracksColumn, path: "groups[\(g)].tracks", message: "cannot synthesise a track: \(error)")
                    }
                }
                out.append(tracks)
            case .files(let patterns):
                var tracks: [TimedTrack] = []
                for pattern in patterns {
                    let paths = expand(pattern, relativeTo: directory)
                    guard !paths.isEmpty else {
                        throw ScenarioError(file: file, line: group.tracksLine, column: group.tracksColumn, path: "groups[\(g)].tracks.files",
                                            message: "\"\(pattern)\" matches no file (relative to \(directory))")
                    }
                    for path in paths {
                        do {
                            // GPX or NMEA, through the reader `convoy gpx inspect` uses.
                            tracks += try TrackFile.load(path).replayable().map(\.track)
                        } catch {
                            throw ScenarioError(file: file, line: group.tracksLine, column: group.tracksColumn, path: "groups[\(g)].tracks.files", message: "\(error)")
                        }
                    }
                }
                out.append(tracks)
            }
        }
        return TrackLibrary(tracks: out)
    }

    /// The files a path or glob names, sorted; relative ones from `directory`.
    static func expand(_ pattern: String, relativeTo directory: String) -> [String] {
        let full = pattern.hasPrefix("/") ? pattern : (directory as NSString).appendingPathComponent(pattern)
        var g = glob_t()
        defer { globfree(&g) }
        guard glob(full, 0, nil, &g) == 0 else { return [] }
        return (0..<Int(g.gl_pathc)).compactMap { g.gl_pathv[$0].map { String(cString: $0) } }.sorted()
    }
}
