import Foundation
import Histogram
import Synchronization

/// The live dashboard's state: the newest frame, a window of chart points, the end once it comes, and the
/// pages listening. Memory is bounded: `window` seconds of points (older ones are dropped), and each
/// listener holds at most a few unsent events (a slow page skips seconds; it never piles them up here).
/// The run publishes once a second (`publish`), from its monitor; pages read `state()` once and then
/// `listen()` (Server-Sent Events).
public final class DashboardFeed: Sendable {
    /// What does not change during the run.
    public struct Header: Codable, Sendable, Equatable {
        public var scenario: String
        public var app: String
        public var devices: Int
        /// Ramp-up, steady and ramp-down, seconds.
        public var planned: Double
        /// Seconds of chart points kept.
        public var window: Int
        /// Whether the app's phones share locations (else the figures are a mailbox's messages, or its actions').
        public var sharesLocations: Bool
        /// The actions a declared app's phones make (docs/apps.md, "Actions"); an app of actions alone (no locations
        /// shared, at least one action) is drawn by them: made, succeeded, and the most-made action's latency.
        public var actions: [String]?
        /// The groups, in the scenario's order.
        public var groups: [String]
        /// Raster tiles under the map (`--map-tiles`): a URL with {z}, {x} and {y}; nil: none.
        public var mapTiles: String?
        /// The scenario's thresholds, as written (`convoy dashboard` judges the shards' merged figures by them).
        public var thresholds: [String]
        /// `convoy dashboard`: the shards' dashboards it merges (nil for one run's own).
        public var shards: [String]?
        /// `--dashboard-control`: the page may stop the run (with the token printed at start).
        public var control: Bool?

        public init(scenario: String, app: String, devices: Int, planned: Double, window: Int = 900, sharesLocations: Bool = true,
                    groups: [String], mapTiles: String? = nil, thresholds: [String] = [], shards: [String]? = nil, actions: [String]? = nil,
                    control: Bool = false) {
            (self.scenario, self.app, self.devices, self.planned, self.window) = (scenario, app, devices, planned, window)
            (self.sharesLocations, self.groups, self.mapTiles, self.thresholds, self.shards) = (sharesLocations, groups, mapTiles, thresholds, shards)
            (self.actions, self.control) = (actions, control ? true : nil)
        }

        /// An app of actions alone: its phones share no locations, and make actions.
        var actionsAlone: Bool { !sharesLocations && !(actions ?? []).isEmpty }

        enum CodingKeys: String, CodingKey {
            case scenario, app, devices, planned, window, groups, thresholds, shards, actions, control
            case sharesLocations = "shares_locations", mapTiles = "map_tiles"
        }
    }

    /// One second of the charts.
    public struct Point: Codable, Sendable, Equatable {
        public var t: Double
        public var online: Int
        public var offRealtime: Int
        public var out: Int
        public var inbound: Int
        /// This second's p50 and p99.
        public var p50: Double?
        public var p99: Double?
        /// The last 10 s's p50 and p99, and the run's p99 so far.
        public var p50Recent: Double?
        public var p99Recent: Double?
        public var p99Run: Double?
        /// Errors so far, and this second's by kind (those not zero).
        public var errors: Int
        public var errorsNow: [String: Int]

        enum CodingKeys: String, CodingKey {
            case t, online, out, p50, p99, errors, offRealtime = "off_realtime", inbound = "in"
            case p50Recent = "p50_recent", p99Recent = "p99_recent", p99Run = "p99_run", errorsNow = "errors_now"
        }
    }

    /// What the run knows once a second (a `FleetRun.Tick`, in plain values); `seq` numbers them (the feed sets it).
    public struct Second: Codable, Sendable {
        public var seq = 0
        public var elapsed: Double
        public var phase: String
        public var onboarded: Int
        public var online: Int
        public var offRealtime: Int
        public var retryQueued: Int
        public var interval: MetricsSnapshot
        public var totals: [String: Int]
        public var groups: [DashboardFrame.Group]
        /// Why requests failed so far: each operation and reason, with the last such request and its answer.
        public var failures: [FailureSample]
        /// The harness's processes this second (one for a run; each shard's, merged).
        public var processes: [DashboardFrame.Process]
        /// The histograms' non-empty buckets, when the feed has read them already (encoded from these, not read again).
        var buckets: [String: LatencyBook.Second]?

        public init(elapsed: Double, phase: String, onboarded: Int, online: Int, offRealtime: Int, retryQueued: Int,
                    interval: MetricsSnapshot, totals: [String: Int], groups: [DashboardFrame.Group], failures: [FailureSample] = [],
                    processes: [DashboardFrame.Process] = []) {
            (self.elapsed, self.phase, self.onboarded, self.online) = (elapsed, phase, onboarded, online)
            (self.offRealtime, self.retryQueued, self.interval, self.totals, self.groups) = (offRealtime, retryQueued, interval, totals, groups)
            (self.failures, self.processes) = (failures, processes)
        }

        enum CodingKeys: String, CodingKey {
            case seq, elapsed, phase, onboarded, online, totals, groups, counters, histograms, failures, processes
            case offRealtime = "off_realtime", retryQueued = "retry_queued"
        }

        // The second's histograms travel sparse, as [value, count] pairs of their non-empty buckets (a whole
        // HdrHistogram is some 40 kB of JSON, nearly all zeros); read back into the same buckets, nothing is lost.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            (seq, elapsed, phase) = (try c.decode(Int.self, forKey: .seq), try c.decode(Double.self, forKey: .elapsed), try c.decode(String.self, forKey: .phase))
            (onboarded, online) = (try c.decode(Int.self, forKey: .onboarded), try c.decode(Int.self, forKey: .online))
            (offRealtime, retryQueued) = (try c.decode(Int.self, forKey: .offRealtime), try c.decode(Int.self, forKey: .retryQueued))
            (totals, groups) = (try c.decode([String: Int].self, forKey: .totals), try c.decode([DashboardFrame.Group].self, forKey: .groups))
            failures = try c.decodeIfPresent([FailureSample].self, forKey: .failures) ?? []
            processes = try c.decodeIfPresent([DashboardFrame.Process].self, forKey: .processes) ?? []
            interval = MetricsSnapshot()
            interval.counters = try c.decode([String: Int].self, forKey: .counters)
            for (name, pairs) in try c.decode([String: [[UInt64]]].self, forKey: .histograms) {
                var h = MetricsSnapshot.emptyHistogram()
                for pair in pairs where pair.count == 2 && pair[1] > 0 {
                    _ = h.record(min(max(pair[0], 1), MetricsSnapshot.highest), count: pair[1])
                }
                interval.histograms[name] = h
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(seq, forKey: .seq)
            try c.encode(elapsed, forKey: .elapsed)
            try c.encode(phase, forKey: .phase)
            try c.encode(onboarded, forKey: .onboarded)
            try c.encode(online, forKey: .online)
            try c.encode(offRealtime, forKey: .offRealtime)
            try c.encode(retryQueued, forKey: .retryQueued)
            try c.encode(totals, forKey: .totals)
            try c.encode(groups, forKey: .groups)
            if !failures.isEmpty { try c.encode(failures, forKey: .failures) }
            if !processes.isEmpty { try c.encode(processes, forKey: .processes) }
            try c.encode(interval.counters, forKey: .counters)
            let sparse = buckets ?? interval.histograms.mapValues(LatencyBook.Second.init)
            try c.encode(sparse.mapValues { s in s.buckets.map { [$0.value, $0.count] } }, forKey: .histograms)
        }
    }

    private struct State {
        var points: [Point] = []
        var latest: DashboardFrame?
        var end: DashboardEnd?
        /// Every histogram so far and over the last seconds (thresholds are judged on the run's).
        var book = LatencyBook()
        var errors = ErrorTimeline()
        var listeners: [Int: AsyncStream<Event>.Continuation] = [:]
        var nextListener = 0
        /// The newest seconds as published, for `convoy dashboard` (`seconds(after:)`): every histogram kept as its
        /// non-empty buckets (a few kilobytes, where whole ones hold some 190 kB each), encoded only when asked for.
        var recent: [Second] = []
        var published = 0
    }

    public let header: Header
    private let thresholds: [Threshold]
    private let store = Mutex(State())
    /// Events a slow listener may have waiting before older ones are dropped.
    static let listenerBuffer = 4

    public init(_ header: Header, thresholds: [Threshold]) {
        self.header = header
        self.thresholds = thresholds
    }

    // MARK: The run

    /// This second, as a frame every page listening receives.
    public func publish(_ second: Second) {
        // Each histogram's non-empty buckets, read once: for the last 10 s's figures and for a merging dashboard.
        var second = second
        let buckets = second.interval.histograms.mapValues(LatencyBook.Second.init)
        second.buckets = buckets
        let published: (seq: Int, event: Event?)? = store.withLock { s in
            guard s.end == nil else { return nil }
            s.published += 1
            s.book.add(second.interval.histograms, buckets: buckets)
            var measured = s.book.run
            measured.counters = second.totals
            var frame = Self.frame(second, header: header, thresholds: thresholds, measured: measured, book: s.book)
            frame.operations = s.book.operations(first: frame.latency)
            frame.processes = second.processes
            (frame.errorsNow, frame.errorNotes) = s.errors.add(frame.errors, at: frame.t, failures: second.failures)
            s.latest = frame
            let main = frame.operations.first { $0.name == frame.latency }
            s.points.append(Point(t: frame.t, online: frame.online, offRealtime: frame.offRealtime, out: frame.out, inbound: frame.inbound,
                                  p50: frame.p50, p99: frame.p99, p50Recent: main?.recent?.p50, p99Recent: main?.recent?.p99, p99Run: main?.run.p99,
                                  errors: frame.errors.values.reduce(0, +), errorsNow: frame.errorsNow))
            if s.points.count > header.window { s.points.removeFirst(s.points.count - header.window) }
            guard !s.listeners.isEmpty else { return (s.published, nil) }
            return (s.published, Event(seq: s.published, name: "tick", text: Self.event("tick", frame, id: s.published)))
        }
        guard let published else { return }
        if let event = published.event { broadcast(event) }
        // Kept for a merging dashboard (the run publishes from one task, so seconds are kept in turn).
        var kept = second
        (kept.seq, kept.buckets, kept.interval.histograms) = (published.seq, buckets, [:])
        store.withLock { s in
            s.recent.append(kept)
            if s.recent.count > Self.recentKept { s.recent.removeFirst(s.recent.count - Self.recentKept) }
        }
    }

    /// The run's end: every page gets it, and the streams close.
    public func finish(_ end: DashboardEnd) {
        let (listeners, seq) = store.withLock { s -> ([AsyncStream<Event>.Continuation], Int) in
            s.end = end
            defer { s.listeners = [:] }
            return (Array(s.listeners.values), s.published + 1)
        }
        let event = Event(seq: seq, name: "end", text: Self.event("end", end, id: seq))
        for l in listeners {
            l.yield(event)
            l.finish()
        }
    }

    // MARK: Pages

    /// Everything a page needs to draw at once: the header, the window of points, the newest frame, the end.
    public func state() -> Data {
        struct Whole: Encodable {
            var header: Header
            var points: [Point]
            var latest: DashboardFrame?
            var end: DashboardEnd?
        }
        let whole = store.withLock { Whole(header: header, points: $0.points, latest: $0.latest, end: $0.end) }
        return (try? Self.encoder.encode(whole)) ?? Data("{}".utf8)
    }

    /// One event for the pages: its number (each second's `seq`; the end one past the last), its name, and its
    /// Server-Sent Events text (`id:` its number).
    public struct Event: Sendable, Equatable {
        public let seq: Int
        public let name: String
        public let text: String
    }

    /// The events from now on (`event: tick` once a second, `event: end` last), and the number of the last one
    /// published before them; after the end, the end at once. A listener that does not keep up holds only the newest
    /// `listenerBuffer`: `CatchingUp` tells it what it skipped.
    public func listen() -> (after: Int, events: AsyncStream<Event>) { listen(atMost: .max)! }

    /// As `listen()`, unless `atMost` pages are listening already (nil: this one is not let in).
    public func listen(atMost: Int) -> (after: Int, events: AsyncStream<Event>)? {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(Self.listenerBuffer))
        let admitted: (ended: DashboardEnd?, after: Int)? = store.withLock { s in
            guard s.end == nil else { return (s.end, s.published) }
            guard s.listeners.count < atMost else { return nil }
            let id = s.nextListener
            s.nextListener += 1
            s.listeners[id] = continuation
            continuation.onTermination = { [weak self] _ in self?.store.withLock { _ = $0.listeners.removeValue(forKey: id) } }
            return (nil, s.published)
        }
        guard let (ended, after) = admitted else {
            continuation.finish()
            return nil
        }
        if let ended {
            continuation.yield(Event(seq: after + 1, name: "end", text: Self.event("end", ended, id: after + 1)))
            continuation.finish()
        }
        return (after, stream)
    }

    /// What one listener's connection writes: each event, preceded by `event: skipped` (`{"skipped": N, "seq": …}`)
    /// when seconds were dropped before it because the listener fell behind; once the run has ended, the seconds still
    /// waiting are skipped too, so a slow listener reaches the end as soon as it can read it.
    public struct CatchingUp: Sendable {
        var last: Int
        public private(set) var skipped = 0

        public init(after: Int) { last = after }

        public mutating func text(for event: Event, ended: Bool) -> String? {
            if event.name == "tick", ended { return nil }
            let gap = event.seq - last - 1
            last = max(last, event.seq)
            guard gap > 0 else { return event.text }
            skipped += gap
            return "event: skipped\ndata: {\"skipped\":\(gap),\"seq\":\(event.seq)}\n\n" + event.text
        }
    }

    /// The seconds published after `seq` (at most the newest `recentKept`), for `convoy dashboard` to merge: a JSON array
    /// of `Second`.
    public func seconds(after seq: Int) -> Data {
        let kept = store.withLock { s in s.recent.filter { $0.seq > seq } }
        return (try? Self.encoder.encode(kept)) ?? Data("[]".utf8)
    }

    /// How many seconds have been published.
    public var published: Int { store.withLock { $0.published } }

    /// The end, once the run has one.
    public var end: DashboardEnd? { store.withLock { $0.end } }

    /// Seconds kept for `seconds(after:)`: a merging dashboard that misses a minute starts again from the newest.
    static let recentKept = 60

    /// How many pages are listening.
    public var listeners: Int { store.withLock { $0.listeners.count } }

    private func broadcast(_ event: Event) {
        for l in store.withLock({ Array($0.listeners.values) }) { l.yield(event) }
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return e
    }()

    static func event(_ name: String, _ value: some Encodable, id: Int) -> String {
        let json = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "id: \(id)\nevent: \(name)\ndata: \(json)\n\n"
    }
}

extension MetricsSnapshot {
    init(histograms: [String: Histogram<UInt64>]) {
        self.init()
        self.histograms = histograms
    }
}
