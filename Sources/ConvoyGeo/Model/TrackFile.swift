import Foundation

/// A track file on disk, GPX or NMEA, told apart by its content.
public struct TrackFile: Sendable {
    public enum Format: String, Sendable, Codable { case gpx, nmea }

    public var path: String
    public var format: Format
    public var tracks: [ImportedTrack]
    /// GPX only: the document as read (waypoints, warnings).
    public var document: GPXDocument?
    /// NMEA only: what the sentence reader counted.
    public var nmeaStats: NMEAStats?

    /// Reads and imports every track in `path` under `policy`. A GPX file of
    /// waypoints only reads (no tracks: `inspect` describes it); replaying it
    /// is refused by `replayable()`, with the reason.
    public static func load(_ path: String, policy: ImportPolicy = .default) throws(GeoError) -> TrackFile {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .unreadable("cannot read the file (missing or not readable)", file: path)
        }
        let head = (try? handle.read(upToCount: 4096)) ?? Data()
        try? handle.close()
        switch sniff(head) {
        case .gpx:
            // Streamed: a GPX file of any size is not held in memory as text.
            let doc = try GPXReader.read(contentsOf: path)
            var tracks: [ImportedTrack] = []
            do {
                tracks = try GPXImport.tracks(from: doc, file: path, policy: policy)
            } catch where error == .noTrack {
                tracks = []
            }
            return TrackFile(path: path, format: .gpx, tracks: tracks, document: doc)
        case .nmea:
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .unreadable("cannot read the file (missing or not readable)", file: path)
            }
            let log = NMEAReader.read(text: String(decoding: data, as: UTF8.self))
            let name = (path as NSString).lastPathComponent
            return TrackFile(path: path, format: .nmea, tracks: [try log.track(name: path, policy: policy)].map {
                var t = $0
                t.track.name = name
                return t
            }, nmeaStats: log.stats)
        case nil:
            throw .unreadable("neither GPX (XML) nor NMEA 0183 (lines starting with $)", file: path)
        }
    }

    /// The tracks to replay; an error saying why when there is none (waypoints only, nothing at all).
    public func replayable() throws(GeoError) -> [ImportedTrack] {
        guard tracks.isEmpty else { return tracks }
        let waypoints = document?.waypoints.count ?? 0
        let what = waypoints == 0 ? "no points at all" : "\(waypoints) waypoint(s) but no track or route points"
        throw .noTrack("no replayable track: the file has \(what)", file: path)
    }

    /// GPX starts with `<` (after an optional BOM and white space); NMEA has a
    /// line starting with `$` or `!` among its first lines (gpsd logs open with `#` comments).
    public static func sniff(_ data: Data) -> Format? {
        let head = String(decoding: data.prefix(4096), as: UTF8.self)
        let trimmed = head.drop { $0 == "\u{FEFF}" || $0.isWhitespace }
        if trimmed.first == "<" { return .gpx }
        for line in trimmed.split(whereSeparator: \.isNewline).prefix(64) where line.first == "$" || line.first == "!" {
            return .nmea
        }
        return nil
    }
}
