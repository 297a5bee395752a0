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

    /// Reads and imports every track in `path` under `policy`.
    public static func load(_ path: String, policy: ImportPolicy = .default) throws(GeoError) -> TrackFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .unreadable("cannot read the file (missing or not readable)", file: path)
        }
        switch sniff(data) {
        case .gpx:
            let doc = try GPXReader.read(data: data, file: path)
            return TrackFile(path: path, format: .gpx, tracks: try GPXImport.tracks(from: doc, file: path, policy: policy),
                             document: doc)
        case .nmea:
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
