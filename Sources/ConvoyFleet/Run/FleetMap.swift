import ConvoyGeo
import ConvoyMetrics
import Foundation
import Synchronization

/// The fleet as a map (`FleetMapData`): each phone's newest true position, the modes it shares with each
/// friend, the last updates each friend received from it, and, for a sample of phones spread evenly over the
/// device indices (so every group has its share), their true tracks and every update their friends received.
/// Bounded whatever the run's length: `trackLength` fixes and `receiptsKept` receipts a tracked phone, the
/// last `lastKept` updates per friend.
public final class FleetMap: Sendable {
    /// A fixed-size ring of the newest values.
    struct Ring<T: Sendable>: Sendable {
        private(set) var items: [T] = []
        private var next = 0
        let capacity: Int

        init(capacity: Int) { self.capacity = capacity }

        mutating func append(_ item: T) {
            if items.count < capacity {
                items.append(item)
            } else {
                items[next] = item
                next = (next + 1) % capacity
            }
        }

        /// Oldest first.
        var ordered: [T] { Array(items[next...] + items[..<next]) }
    }

    private struct State {
        var lat: [Float]
        var lon: [Float]
        var state: [FleetMapData.FixState]
        var tracks: [Int: Ring<FleetMapData.Fix>] = [:]
        var received: [Int: Ring<FleetMapData.Receipt>] = [:]
        /// sender → friend → the last updates that friend received from it.
        var last: [Int: [Int32: Ring<FleetMapData.Receipt>]] = [:]
        /// sender → friend → how it shares with that friend.
        var modes: [Int: [Int32: String]] = [:]
    }

    public let groups: [String]
    private let tally: GroupTally
    /// The tracked phones.
    public let tracked: Set<Int>
    public let sampling: String
    private let store: Mutex<State>
    static let trackLength = 720
    static let receiptsKept = 400
    static let lastKept = 3

    /// `groups` and `sizes`: the scenario's, in order; at most `tracking` phones tracked.
    public init(groups: [String], sizes: [Int], tracking: Int = 40) {
        let n = sizes.reduce(0, +)
        self.groups = groups
        tally = GroupTally(sizes: sizes)
        let every = max(1, Int((Double(n) / Double(max(tracking, 1))).rounded(.up)))
        tracked = Set(stride(from: 0, to: n, by: every))
        sampling = tracked.count == n ? "every phone's track is drawn"
            : "the tracks of \(tracked.count) of \(n) phones are drawn (one in every \(every) by index, so each group has its share); every phone's position is marked"
        store = Mutex(State(lat: Array(repeating: .nan, count: n), lon: Array(repeating: .nan, count: n),
                            state: Array(repeating: .gps, count: n)))
    }

    static func mode(_ fuzz: PrivacyFuzz) -> String {
        switch fuzz {
        case .precise: "precise"
        case .general(let decimals): "general:\(decimals)"
        case .geoIndistinguishable(let epsilon): "laplace:\(epsilon)"
        }
    }

    // MARK: Phones report

    /// A phone's tick: its true position (nil: no fix) at wall time `t`, and where that position came from.
    func moved(_ device: Int, at t: Double, to position: GeoPoint?, state: FleetMapData.FixState) {
        store.withLock { s in
            guard device < s.lat.count else { return }
            s.state[device] = state
            if let position {
                (s.lat[device], s.lon[device]) = (Float(position.lat), Float(position.lon))
            }
            guard tracked.contains(device), let lat = position?.lat ?? Double(exactly: s.lat[device]),
                  let lon = position?.lon ?? Double(exactly: s.lon[device]), !lat.isNaN else { return }
            s.tracks[device, default: Ring(capacity: Self.trackLength)].append(.init(t: t, lat: lat, lon: lon, state: state))
        }
    }

    /// How `device` shares with `friend` (set at each tick; only a change writes).
    func shares(_ device: Int, with friend: Int, as fuzz: PrivacyFuzz) {
        let mode = Self.mode(fuzz)
        store.withLock { s in
            if s.modes[device]?[Int32(friend)] != mode { s.modes[device, default: [:]][Int32(friend)] = mode }
        }
    }

    /// `recipient` showed an update from `sender`, sent at wall time `sent`, `latency` seconds later.
    func received(by recipient: Int, from sender: Int, sent: Double, lat: Double, lon: Double, acc: Double, latency: Double?) {
        store.withLock { s in
            let mode = s.modes[sender]?[Int32(recipient)] ?? "precise"
            let receipt = FleetMapData.Receipt(t: sent, by: recipient, lat: lat, lon: lon, acc: acc, latencyMs: latency.map { $0 * 1000 }, mode: mode)
            s.last[sender, default: [:]][Int32(recipient), default: Ring(capacity: Self.lastKept)].append(receipt)
            if tracked.contains(sender) { s.received[sender, default: Ring(capacity: Self.receiptsKept)].append(receipt) }
        }
    }

    // MARK: The map reads

    /// The map now; `online` says which phones are (all false at the end). `recent`: only each tracked phone's
    /// newest that many fixes and receipts (the live map, read every two seconds); nil: all that is kept (map.json).
    public func snapshot(online: [Bool], recent: Int? = nil) -> FleetMapData {
        store.withLock { s in
            let phones = s.lat.indices.map { i in
                FleetMapData.Phone(i: i, g: tally.group(of: i), lat: s.lat[i].isNaN ? nil : Double(s.lat[i]),
                                   lon: s.lon[i].isNaN ? nil : Double(s.lon[i]), online: i < online.count && online[i], state: s.state[i])
            }
            let tracks = tracked.sorted().map { i in
                FleetMapData.Tracked(i: i, g: tally.group(of: i), track: Array((s.tracks[i]?.ordered ?? []).suffix(recent ?? Int.max)),
                                     received: Array((s.received[i]?.ordered ?? []).suffix(recent ?? Int.max)))
            }
            return FleetMapData(groups: groups, phones: phones, tracked: tracks, sampling: sampling)
        }
    }

    /// One phone and what each of its friends last received from it (nil: no such phone).
    public func detail(_ device: Int, online: Bool) -> FleetMapData.PhoneDetail? {
        store.withLock { s in
            guard device >= 0, device < s.lat.count else { return nil }
            let friends = Set((s.modes[device] ?? [:]).keys).union((s.last[device] ?? [:]).keys).sorted()
            return FleetMapData.PhoneDetail(
                i: device, group: groups.isEmpty ? "" : groups[min(tally.group(of: device), groups.count - 1)],
                lat: s.lat[device].isNaN ? nil : Double(s.lat[device]), lon: s.lon[device].isNaN ? nil : Double(s.lon[device]),
                online: online, state: s.state[device],
                friends: friends.map { f in .init(i: Int(f), mode: s.modes[device]?[f], last: s.last[device]?[f].map { Array($0.ordered.reversed()) } ?? []) },
                track: tracked.contains(device) ? (s.tracks[device]?.ordered ?? []) : nil)
        }
    }
}
