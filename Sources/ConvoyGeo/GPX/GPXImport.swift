import Foundation

/// A track from a file with what the policy did to it.
public struct ImportedTrack: Hashable, Sendable {
    public var track: TimedTrack
    public var report: ImportReport
    /// "track" or "route".
    public var kind: String
}

/// Turns a GPX document (or NMEA fixes) into replayable tracks under an `ImportPolicy`.
public enum GPXImport {
    /// Every track and route of `doc` that has at least one point. Throws
    /// `.noTrack` (naming the file) when there is none.
    public static func tracks(from doc: GPXDocument, file: String? = nil,
                              policy: ImportPolicy = .default) throws(GeoError) -> [ImportedTrack] {
        try policy.validate()
        var out: [ImportedTrack] = []
        let base = file.map { ($0 as NSString).lastPathComponent } ?? "track"
        for (i, trk) in doc.tracks.enumerated() {
            let name = trk.name.flatMap { $0.isEmpty ? nil : $0 } ?? (doc.tracks.count > 1 ? "\(base)#\(i + 1)" : base)
            if let imported = try importTrack(name: name, segments: trk.segments, policy: policy, file: file) {
                out.append(ImportedTrack(track: imported.0, report: imported.1, kind: "track"))
            }
        }
        for (i, rte) in doc.routes.enumerated() {
            let name = rte.name.flatMap { $0.isEmpty ? nil : $0 } ?? "\(base) route \(i + 1)"
            if var imported = try importTrack(name: name, segments: [rte.points], policy: policy, file: file) {
                imported.1.notes.insert("route: timed along its points at \(policy.fallbackSpeed) m/s where it had no times", at: 0)
                out.append(ImportedTrack(track: imported.0, report: imported.1, kind: "route"))
            }
        }
        guard !out.isEmpty else {
            let what = doc.waypoints.isEmpty ? "no points at all"
                : "\(doc.waypoints.count) waypoint(s) but no track or route points"
            throw .noTrack("no replayable track: the file has \(what)", file: file)
        }
        return out
    }

    /// One track from segments of points; nil if it has no point at all.
    static func importTrack(name: String, segments: [[GPXPoint]], policy: ImportPolicy,
                            file: String? = nil) throws(GeoError) -> (TimedTrack, ImportReport)? {
        try policy.validate()
        var report = ImportReport()
        report.segmentsRead = segments.count
        report.pointsRead = segments.reduce(0) { $0 + $1.count }
        let kept = segments.filter { !$0.isEmpty }
        report.emptySegmentsDropped = segments.count - kept.count
        if report.emptySegmentsDropped > 0 {
            report.notes.append("\(report.emptySegmentsDropped) empty segment(s) dropped")
        }
        guard !kept.isEmpty else { return nil }

        // Join segments, dropping consecutive duplicates; remember where segments start.
        var points: [GPXPoint] = []
        var segmentStarts: [Int] = []
        for seg in kept {
            segmentStarts.append(points.count)
            for p in seg {
                if let last = points.last, last.position == p.position, last.time == p.time {
                    report.duplicatePointsRemoved += 1
                    continue
                }
                points.append(p)
            }
        }
        if report.duplicatePointsRemoved > 0 {
            report.notes.append("\(report.duplicatePointsRemoved) duplicate point(s) dropped")
        }
        report.pointsWithoutTime = points.count { $0.time == nil }

        // Work in seconds from the first timed point: absolute Unix times leave
        // only ~0.2 µs of resolution, too coarse for re-timing close points.
        let epoch = points.lazy.compactMap(\.time).first?.timeIntervalSince1970 ?? 0
        var relative = points.map { $0.time.map { $0.timeIntervalSince1970 - epoch } }
        // One time on every point (a logger's placeholder, often 1970-01-01): no time at all.
        if relative.count(where: { $0 != nil }) > 1, Set(relative.compactMap { $0 }).count == 1 {
            report.notes.append("every point has the same time (\(GPXTime().format(Date(timeIntervalSince1970: epoch)))), a placeholder: read as untimed")
            relative = relative.map { _ in nil }
            report.pointsWithoutTime = points.count
        } else if let squeezed = squeezedTimes(relative, points: points.map(\.position), ceiling: policy.maximumSpeed) {
            // Placeholders written a fraction of a second apart (one with fewer digits): re-timing
            // between them would replay the track as a teleport.
            report.notes.append(squeezed + ": placeholders, read as untimed")
            relative = relative.map { _ in nil }
            report.pointsWithoutTime = points.count
        }
        var partial = keepIncreasing(relative, report: &report)
        let times = try fillTimes(&partial, points: points.map(\.position), policy: policy, report: &report)
        report.sourceStart = report.retimedByDistance ? nil : times.first.map { Date(timeIntervalSince1970: epoch + $0) }
        if let start = report.sourceStart {
            report.notes.append("recorded from \(GPXTime().format(start)): replayed relative to its first point")
        }
        for s in segmentStarts.dropFirst() where s > 0 && s < times.count {
            report.segmentGaps.append(times[s] - times[s - 1])
        }
        do {
            let track = try TimedTrack(name: name, times: times, points: points.map(\.position),
                                       elevations: points.map(\.elevation), hdops: points.map(\.hdop),
                                       satellites: points.map(\.satellites), start: report.sourceStart)
            return (track, report)
        } catch {
            throw error.located(file: file, line: points.first?.line)
        }
    }

    /// Why the times cannot be real, when the timed points span less time than their path takes at `ceiling`
    /// m/s; nil when they can.
    static func squeezedTimes(_ times: [Double?], points: [GeoPoint], ceiling: Double) -> String? {
        let timed = times.indices.filter { times[$0] != nil }
        guard let first = timed.first, let last = timed.last, last > first else { return nil }
        let values = timed.map { times[$0]! }
        let span = values.max()! - values.min()!
        var distance = 0.0
        for i in (first + 1)...last { distance += points[i - 1].distance(to: points[i]) }
        guard distance > span * ceiling else { return nil }
        let spanText = span >= 1 ? String(format: "%.1f s", span) : String(format: "%.1f ms", span * 1000)
        return "the times span \(spanText) for \(Int(distance.rounded())) m between the first and last timed point "
            + "(faster than \(String(format: "%g", ceiling)) m/s)"
    }

    /// Keeps the times on the longest strictly increasing subsequence; the rest
    /// become nil (counted as out of order). Among equally long runs it keeps
    /// the earlier points' times: a glitch is usually a later time jumping back.
    private static func keepIncreasing(_ times: [Double?], report: inout ImportReport) -> [Double?] {
        // Scan backwards for the longest strictly decreasing run; patience sorting
        // keeps the largest tail per length, which favours earlier points on ties.
        let timed = Array(times.indices.filter { times[$0] != nil }.reversed())
        guard timed.count > 1 else { return times }
        var tails: [Int] = []  // tails[k]: position in `timed` ending the best run of length k+1
        var previous = [Int](repeating: -1, count: timed.count)
        for (j, i) in timed.enumerated() {
            let t = times[i]!
            var lo = 0, hi = tails.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if times[timed[tails[mid]]]! > t { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 { previous[j] = tails[lo - 1] }
            if lo == tails.count { tails.append(j) } else { tails[lo] = j }
        }
        var keep = Set<Int>()
        var j = tails.last ?? -1
        while j >= 0 {
            keep.insert(timed[j])
            j = previous[j]
        }
        var out = times
        for i in timed where !keep.contains(i) {
            out[i] = nil
            report.outOfOrderTimes += 1
        }
        if report.outOfOrderTimes > 0 {
            report.notes.append("\(report.outOfOrderTimes) time(s) out of order set aside and re-timed")
        }
        return out
    }

    /// Interpolates missing times by distance; extrapolates at the fallback speed.
    private static func fillTimes(_ times: inout [Double?], points: [GeoPoint], policy: ImportPolicy,
                                  report: inout ImportReport) throws(GeoError) -> [Double] {
        guard policy.fallbackSpeed > 0 else {
            throw .badParameter("the fallback speed must be > 0 m/s", key: "fallbackSpeed")
        }
        let step: (Int) -> Double = { i in
            max(points[i - 1].distance(to: points[i]) / policy.fallbackSpeed, policy.minimumStep)
        }
        let timed = times.indices.filter { times[$0] != nil }
        let missing = times.count - timed.count
        guard let first = timed.first, let last = timed.last else {
            report.retimedByDistance = true
            report.retimedPoints = times.count
            report.notes.append("no usable time: timed by distance at \(policy.fallbackSpeed) m/s")
            var t = 0.0
            return times.indices.map { i in
                if i > 0 { t += step(i) }
                return t
            }
        }
        // Leading and trailing points, at the fallback speed.
        if first > 0 {
            for i in stride(from: first - 1, through: 0, by: -1) { times[i] = times[i + 1]! - step(i + 1) }
        }
        if last < times.count - 1 {
            for i in (last + 1)..<times.count { times[i] = times[i - 1]! + step(i) }
        }
        // Inner gaps, by the distance travelled between the timed neighbours.
        for (a, b) in zip(timed, timed.dropFirst()) where b - a > 1 {
            var cumulative = [0.0]
            // Each step counts at least 1 cm, so points at one place still get distinct times.
            for i in (a + 1)...b { cumulative.append(cumulative.last! + max(points[i - 1].distance(to: points[i]), 0.01)) }
            let total = cumulative.last!
            let t0 = times[a]!, t1 = times[b]!
            for i in (a + 1)..<b { times[i] = t0 + (t1 - t0) * cumulative[i - a] / total }
        }
        // Guarantee strictly increasing times: nudge any tie forward by 1 ms.
        var out = times.map { $0! }
        for i in out.indices.dropFirst() where !(out[i] > out[i - 1]) {
            out[i] = out[i - 1] + 0.001
        }
        report.retimedPoints = missing
        if missing > 0 {
            report.notes.append("\(missing) point(s) given a time by distance between timed neighbours")
        }
        return out
    }
}
