import ArgumentParser
import ConvoyGeo
import Foundation

extension Convoy.Gpx {
    struct Inspect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect",
            abstract: "Describe GPX or NMEA files: points, duration, distance, speeds, gaps, bounds, and what the import policy did.")

        @Argument(help: "GPX 1.0/1.1 or NMEA 0183 files.")
        var files: [String]

        @Flag(help: "Print JSON (one object with a `files` array) instead of text.")
        var json = false

        @Option(name: .customLong("fallback-speed"), help: "m/s used to time points without usable times.")
        var fallbackSpeed: Double = ImportPolicy.default.fallbackSpeed

        @Option(name: .customLong("max-speed"),
                help: "m/s no track can travel: times needing more over the whole track are placeholders, and faster steps are warned about.")
        var maxSpeed: Double = ImportPolicy.default.maximumSpeed

        func run() async throws {
            let policy = ImportPolicy(fallbackSpeed: fallbackSpeed, maximumSpeed: maxSpeed)
            do {
                try policy.validate()
            } catch {
                throw CommandFailure.badInput("--\(error.key == "maximumSpeed" ? "max-speed" : "fallback-speed"): \(error.message)")
            }
            var reports: [FileReport] = []
            for path in files {
                let file = try TrackFile.load(path, policy: policy)
                reports.append(FileReport(file, ceiling: maxSpeed))
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                encoder.dateEncodingStrategy = .iso8601
                let data = try encoder.encode(["files": reports])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print(reports.map(\.text).joined(separator: "\n"), terminator: "")
            }
        }
    }
}

/// One file's inspection, as JSON or text.
private struct FileReport: Encodable {
    let path: String
    let format: TrackFile.Format
    let tracks: [TrackInspection]
    let waypoints: Int
    let warnings: [String]
    let nmea: NMEAStats?

    init(_ file: TrackFile, ceiling: Double) {
        path = file.path
        format = file.format
        tracks = file.tracks.map { TrackInspection($0, ceiling: ceiling) }
        waypoints = file.document?.waypoints.count ?? 0
        warnings = file.document?.warnings ?? []
        nmea = file.nmeaStats
    }

    var text: String {
        var out = "\(path) (\(format == .gpx ? "GPX" : "NMEA 0183"))\n"
        for (i, t) in tracks.enumerated() {
            out += "  \(t.kind) \(i + 1) of \(tracks.count): \(t.name)\n"
            out += "    points     \(t.points) in \(t.segments) segment(s)\n"
            out += "    duration   \(Format.duration(t.duration))\n"
            out += "    distance   \(Format.distance(t.distance))\n"
            out += "    speed      median \(Format.speed(t.speed.median)), p95 \(Format.speed(t.speed.p95)), max \(Format.speed(t.speed.max))\n"
            out += "    interval   median \(Format.seconds(t.gaps.medianInterval)); \(t.gaps.count) gap(s) over \(Format.seconds(t.gaps.threshold)), longest \(Format.seconds(t.gaps.longest))\n"
            if t.speed.stepsOverCeiling > 0 {
                out += "    warning    \(t.speed.stepsOverCeiling) step(s) faster than \(Format.speed(t.speed.ceiling)): a jump or a bad time\n"
            }
            out += "    untimed    \(t.pointsWithoutTime) point(s) without time\n"
            out += String(format: "    bounds     %.6f,%.6f to %.6f,%.6f\n", t.bounds.minLat, t.bounds.minLon, t.bounds.maxLat, t.bounds.maxLon)
            let notes = t.importPolicy.notes
            out += "    policy     \(notes.isEmpty ? "nothing to change" : notes.joined(separator: "; "))\n"
            if !t.importPolicy.segmentGaps.isEmpty {
                out += "    joins      \(t.importPolicy.segmentGaps.map { Format.seconds($0) }.joined(separator: ", ")) between segments\n"
            }
        }
        if waypoints > 0 {
            out += tracks.isEmpty ? "  waypoints  \(waypoints), and no track or route points: not replayable as a track\n"
                : "  waypoints  \(waypoints) (kept, not replayed)\n"
        } else if tracks.isEmpty, format == .gpx {
            out += "  empty      no track, route or waypoint\n"
        }
        for w in warnings { out += "  warning    \(w)\n" }
        if let n = nmea {
            out += "  sentences  \(n.sentences) valid of \(n.lines) lines: \(n.used) RMC/GGA used, \(n.otherTypes) of other types skipped, "
            out += "\(n.badChecksum) bad checksum, \(n.missingChecksum) without checksum, \(n.malformed) malformed, \(n.noFix) epoch(s) without fix\n"
        }
        return out
    }
}
