import Foundation

/// What `convoy gpx record` keeps from a `GPSDSource`: fixes per device as a
/// GPX track, and counts for its summary. A device gets one `<trk>` (named by
/// its path); a new `<trkseg>` starts after a lost connection, when time goes
/// back, or after a gap longer than `NMEAWriter.maximumInterpolation`, so a
/// replay does not draw a line across a stretch the receiver never saw.
public struct GPSDRecording: Sendable {
    /// Fixes recorded (all devices).
    public private(set) var fixes = 0
    /// Reports without a fix, skipped.
    public private(set) var noFix = 0
    /// Connections after the first.
    public private(set) var reconnects = 0
    /// Failed connection attempts.
    public private(set) var failedAttempts = 0
    /// Why the last connection attempt or connection failed.
    public private(set) var lastProblem: String?
    /// Whether any connection was made.
    public private(set) var everConnected = false

    private var order: [String] = []
    private var segments: [String: [[GPXPoint]]] = [:]
    private var breakNext: Set<String> = []

    public init() {}

    public var devices: [String] { order }

    public mutating func record(_ event: GPSDSource.Event) {
        switch event {
        case .connected:
            if everConnected { reconnects += 1 }
            everConnected = true
        case .fix(let fix):
            add(fix)
        case .noFix:
            noFix += 1
        case .unreachable(let reason, _):
            failedAttempts += 1
            lastProblem = reason
        case .disconnected(let reason):
            lastProblem = reason
            breakNext = Set(order)
        }
    }

    private mutating func add(_ fix: GPSDFix) {
        let point = GPXPoint(position: fix.position, elevation: fix.altitude, time: fix.date, hdop: fix.hdop,
                             satellites: fix.satellites, fix: fix.mode == .threeD ? .threeD : .twoD)
        fixes += 1
        guard var list = segments[fix.device], let last = list.last?.last?.time else {
            order.append(fix.device)
            segments[fix.device] = [[point]]
            return
        }
        let gap = fix.time - last.timeIntervalSince1970
        if breakNext.remove(fix.device) != nil || gap <= 0 || gap > NMEAWriter.maximumInterpolation {
            list.append([point])
        } else {
            list[list.count - 1].append(point)
        }
        segments[fix.device] = list
    }

    /// The recording as GPX 1.1, one track per device in the order they first reported.
    public func document(creator: String = "Convoy gpx record") -> GPXDocument {
        GPXDocument(creator: creator, tracks: order.map { GPXTrack(name: $0, segments: segments[$0] ?? []) })
    }
}
