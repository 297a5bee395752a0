import Foundation

/// A GPS fix quality as GPX's `<fix>` names it.
public enum FixType: String, Sendable, Codable, CaseIterable {
    case none, twoD = "2d", threeD = "3d", dgps, pps
}

/// One `trkpt`, `rtept` or `wpt`, with everything Convoy reads from GPX 1.0/1.1.
public struct GPXPoint: Hashable, Sendable {
    public var position: GeoPoint
    public var elevation: Double?
    public var time: Date?
    public var hdop: Double?
    public var vdop: Double?
    public var pdop: Double?
    public var satellites: Int?
    public var fix: FixType?
    public var name: String?
    /// Line in the source file (0 for points made in memory).
    public var line: Int

    public init(position: GeoPoint, elevation: Double? = nil, time: Date? = nil, hdop: Double? = nil,
                vdop: Double? = nil, pdop: Double? = nil, satellites: Int? = nil, fix: FixType? = nil,
                name: String? = nil, line: Int = 0) {
        self.position = position
        self.elevation = elevation
        self.time = time
        self.hdop = hdop
        self.vdop = vdop
        self.pdop = pdop
        self.satellites = satellites
        self.fix = fix
        self.name = name
        self.line = line
    }
}

public struct GPXTrack: Hashable, Sendable {
    public var name: String?
    public var segments: [[GPXPoint]]

    public init(name: String? = nil, segments: [[GPXPoint]]) {
        self.name = name
        self.segments = segments
    }
}

public struct GPXRoute: Hashable, Sendable {
    public var name: String?
    public var points: [GPXPoint]

    public init(name: String? = nil, points: [GPXPoint]) {
        self.name = name
        self.points = points
    }
}

/// A parsed GPX file. Extensions and elements Convoy has no use for are skipped.
public struct GPXDocument: Hashable, Sendable {
    public enum Version: String, Sendable { case v1_0 = "1.0", v1_1 = "1.1" }

    public var version: Version
    public var creator: String
    public var tracks: [GPXTrack]
    public var routes: [GPXRoute]
    public var waypoints: [GPXPoint]
    /// Things the reader tolerated (times without a zone, unknown fix values…).
    public var warnings: [String]

    public init(version: Version = .v1_1, creator: String = "Convoy", tracks: [GPXTrack] = [],
                routes: [GPXRoute] = [], waypoints: [GPXPoint] = [], warnings: [String] = []) {
        self.version = version
        self.creator = creator
        self.tracks = tracks
        self.routes = routes
        self.waypoints = waypoints
        self.warnings = warnings
    }
}
