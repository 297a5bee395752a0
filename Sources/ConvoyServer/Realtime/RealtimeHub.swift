import ConvoyFormats
import ConvoyJSON
import ConvoyTime
import Foundation
import GRDB
import Synchronization

/// Every Realtime connection, the channels they joined, and an index of their
/// `postgres_changes` bindings by `column=eq.value`, so that delivering a row
/// to its one recipient costs O(1) however many subscribers there are.
/// Committed changes come in through the change feed (`ChangeFeed`), which
/// checks row-level security before anything is delivered.
final class RealtimeHub: Sendable {
    typealias ConnectionID = UInt64

    struct Member: Sendable {
        var principal: Principal
        /// Access-token expiry, Unix seconds (nil: an API key, which does not expire in practice).
        var expiresAt: Double?
        var bindings: [ChangeBinding]
        var broadcastSelf: Bool
        var broadcastAck: Bool
        var presenceKey: String
        var channelName: String
        /// A private channel's permissions (Realtime Authorization); nil: a public channel.
        var policies: ChannelPolicies? = nil

        /// Where its frames fan out: private and public channels of one name are apart, as on Supabase.
        func room(_ topic: String) -> String { RealtimeHub.room(topic, isPrivate: policies != nil) }

        /// Whether it receives broadcasts (a private channel's broadcast read permission).
        var readsBroadcast: Bool { policies?.broadcastRead ?? true }
        /// Whether it receives presence (a private channel's presence read permission).
        var readsPresence: Bool { policies?.presenceRead ?? true }
    }

    /// The key of the room a channel's frames fan out in.
    static func room(_ topic: String, isPrivate: Bool) -> String { isPrivate ? "private|" + topic : topic }

    /// A presence meta object: JSON built once, then only read.
    struct Meta: Sendable { let value: JSONValue }

    private struct SubKey: Hashable { var connection: ConnectionID; var topic: String }

    private struct TableIndex {
        /// column → value → subscribers with `column=eq.value`.
        var eq: [String: [String: Set<SubKey>]] = [:]
        /// Subscribers without a filter or with `in.(…)`: checked one by one.
        var scan: Set<SubKey> = []
    }

    private struct State {
        var nextID: ConnectionID = 1
        var sinks: [ConnectionID: RealtimeOutlet] = [:]
        var channels: [ConnectionID: [String: Member]] = [:]
        /// room → its connections.
        var topics: [String: Set<ConnectionID>] = [:]
        var tables: [String: TableIndex] = [:]
        /// room → presence key → connection → metas.
        var presence: [String: [String: [ConnectionID: [Meta]]]] = [:]
    }

    private let state = Mutex(State())
    let schema: Schema
    let clock: any ConvoyClock
    /// Supabase's limit per connection.
    static let maxChannels = 100

    /// Each table's `columns` as a change carries them, written once.
    private let columns: [String: JSONValue]

    init(schema: Schema, clock: any ConvoyClock) {
        self.schema = schema
        self.clock = clock
        columns = schema.tables.mapValues(Self.columns(of:))
    }

    // MARK: - Connections and channels

    func connect(_ sink: RealtimeOutlet) -> ConnectionID {
        state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.sinks[id] = sink
            return id
        }
    }

    /// Closes every connection whose client sent nothing since monotonic
    /// second `cutoff` (close 1000, as Phoenix does after its idle timeout);
    /// how many. Their sessions end as for any close.
    @discardableResult
    func closeIdle(heardBefore cutoff: Double) -> Int {
        let idle = state.withLock { s in s.sinks.values.filter { !$0.isClosed && $0.lastHeard < cutoff } }
        for outlet in idle { outlet.closeIdle() }
        return idle.count
    }

    func disconnect(_ id: ConnectionID) {
        let topics = state.withLock { s in Array(s.channels[id]?.keys ?? [:].keys) }
        for t in topics { leave(id, topic: t) }
        state.withLock { s in
            s.sinks[id]?.finish()
            s.sinks[id] = nil
            s.channels[id] = nil
        }
    }

    /// Joins (or re-joins) a topic; false when the connection has too many channels.
    /// A re-join ends the presence the channel had, as Phoenix closes the channel it replaces.
    func join(_ id: ConnectionID, topic: String, member: Member) -> Bool {
        let (joined, replaced): (Bool, String?) = state.withLock { s in
            let joined = s.channels[id] ?? [:]
            if joined[topic] == nil, joined.count >= Self.maxChannels { return (false, nil) }
            if let old = joined[topic] {
                Self.unindex(&s, SubKey(connection: id, topic: topic), old.bindings)
                Self.remove(&s, id, room: old.room(topic))
            }
            s.channels[id, default: [:]][topic] = member
            s.topics[member.room(topic), default: []].insert(id)
            Self.index(&s, SubKey(connection: id, topic: topic), member.bindings)
            return (true, joined[topic]?.room(topic))
        }
        if let replaced { untrack(id, topic: topic, room: replaced) }
        return joined
    }

    func member(_ id: ConnectionID, topic: String) -> Member? {
        state.withLock { $0.channels[id]?[topic] }
    }

    func update(_ id: ConnectionID, topic: String, _ change: (inout Member) -> Void) {
        state.withLock { s in
            guard var m = s.channels[id]?[topic] else { return }
            change(&m)
            s.channels[id]![topic] = m
        }
    }

    func leave(_ id: ConnectionID, topic: String) {
        let room: String? = state.withLock { s in
            guard let m = s.channels[id]?[topic] else { return nil }
            Self.unindex(&s, SubKey(connection: id, topic: topic), m.bindings)
            s.channels[id]![topic] = nil
            Self.remove(&s, id, room: m.room(topic))
            return m.room(topic)
        }
        if let room { untrack(id, topic: topic, room: room) }
    }

    private static func remove(_ s: inout State, _ id: ConnectionID, room: String) {
        s.topics[room]?.remove(id)
        if s.topics[room]?.isEmpty == true { s.topics[room] = nil }
    }

    func topics(of id: ConnectionID) -> [String: Member] {
        state.withLock { $0.channels[id] ?? [:] }
    }

    func send(_ id: ConnectionID, _ message: PhoenixFrame) { sendText(id, message.text) }

    func sendText(_ id: ConnectionID, _ text: String) {
        let sink = state.withLock { $0.sinks[id] }
        sink?.send(text)
    }

    /// The users joined to each private channel, by channel name (the service role left out).
    func privateChannelUsers() -> [String: Set<String>] {
        state.withLock { s in
            var out: [String: Set<String>] = [:]
            for members in s.channels.values {
                for m in members.values where m.policies != nil {
                    if let uid = m.principal.userID { out[m.channelName, default: []].insert(uid) }
                }
            }
            return out
        }
    }

    /// Whether `id` may join one more channel.
    func canJoin(_ id: ConnectionID, topic: String) -> Bool {
        state.withLock { s in
            let joined = s.channels[id] ?? [:]
            return joined[topic] != nil || joined.count < Self.maxChannels
        }
    }

    // MARK: - Broadcast and presence

    /// Sends a broadcast to the room of `id`'s channel `topic`: to each member
    /// that may read broadcasts there (every member of a public channel), and
    /// to `id` itself only with `includeSelf`.
    func broadcast(from id: ConnectionID, topic: String, payload: JSONValue, includeSelf: Bool) {
        let text = PhoenixFrame(topic: topic, event: PhoenixFrame.Event.broadcast, payload: payload).text
        let sinks = state.withLock { s -> [RealtimeOutlet] in
            guard let room = s.channels[id]?[topic]?.room(topic) else { return [] }
            return Self.members(s, room: room, topic: topic, reading: \.readsBroadcast).filter { includeSelf || $0 != id }.compactMap { s.sinks[$0] }
        }
        for sink in sinks { sink.send(text) }
    }

    /// The room's connections whose channel `topic` may read what `reading` says.
    private static func members(_ s: State, room: String, topic: String, reading: KeyPath<Member, Bool>) -> [ConnectionID] {
        (s.topics[room] ?? []).filter { s.channels[$0]?[topic]?[keyPath: reading] == true }
    }

    /// The presence state of `id`'s channel `topic`: key → `{metas}`.
    func presenceState(_ id: ConnectionID, topic: String) -> JSONValue {
        state.withLock { s in
            let room = s.channels[id]?[topic]?.room(topic) ?? topic
            return JSONValue((s.presence[room] ?? [:]).mapValues { byConnection in
                ["metas": .array(byConnection.values.flatMap { $0 }.map(\.value))]
            })
        }
    }

    func track(_ id: ConnectionID, topic: String, key: String, meta: JSONValue) {
        let boxed = Meta(value: meta)
        let (old, sinks): ([Meta], [RealtimeOutlet]) = state.withLock { s in
            guard let room = s.channels[id]?[topic]?.room(topic) else { return ([], []) }
            let old = s.presence[room]?[key]?[id] ?? []
            s.presence[room, default: [:]][key, default: [:]][id] = [boxed]
            return (old, Self.members(s, room: room, topic: topic, reading: \.readsPresence).compactMap { s.sinks[$0] })
        }
        let joins = JSONValue([key: ["metas": [meta]]])
        let leaves = old.isEmpty ? JSONValue.object([]) : JSONValue([key: ["metas": .array(old.map(\.value))]])
        let text = PhoenixFrame(topic: topic, event: PhoenixFrame.Event.presenceDiff, payload: ["joins": joins, "leaves": leaves]).text
        for sink in sinks { sink.send(text) }
    }

    func untrack(_ id: ConnectionID, topic: String) {
        guard let room = member(id, topic: topic)?.room(topic) else { return }
        untrack(id, topic: topic, room: room)
    }

    /// Ends `id`'s presence in `room` (also once its channel is gone: leaving untracks).
    private func untrack(_ id: ConnectionID, topic: String, room: String) {
        let (gone, sinks): ([(String, [Meta])], [RealtimeOutlet]) = state.withLock { s in
            var gone: [(String, [Meta])] = []
            for (key, var byConnection) in s.presence[room] ?? [:] {
                if let metas = byConnection.removeValue(forKey: id) {
                    gone.append((key, metas))
                    s.presence[room]![key] = byConnection.isEmpty ? nil : byConnection
                }
            }
            if s.presence[room]?.isEmpty == true { s.presence[room] = nil }
            return (gone, Self.members(s, room: room, topic: topic, reading: \.readsPresence).compactMap { s.sinks[$0] })
        }
        guard !gone.isEmpty else { return }
        var leaves: [String: JSONValue] = [:]
        for (key, metas) in gone { leaves[key] = ["metas": .array(metas.map(\.value))] }
        let text = PhoenixFrame(topic: topic, event: PhoenixFrame.Event.presenceDiff, payload: ["joins": .object([]), "leaves": JSONValue(leaves)]).text
        for sink in sinks { sink.send(text) }
    }

    // MARK: - postgres_changes

    /// A subscriber a change is bound for: its connection, topic, the ids of its
    /// matching bindings, and who it is.
    struct Delivery: Sendable {
        var connection: ConnectionID
        var topic: String
        var ids: [Int]
        var member: Member
    }

    /// Whether anyone subscribes to changes of `table` (else there is nothing to route).
    func hasSubscribers(table: String) -> Bool {
        state.withLock { s in s.tables[table].map { !$0.scan.isEmpty || $0.eq.values.contains { !$0.isEmpty } } ?? false }
    }

    /// The subscribers whose bindings match `change`, before any RLS check.
    func route(_ change: ChangeEvent) -> [Delivery] {
        let record = change.type == "DELETE" ? change.oldRecord : change.record
        return state.withLock { s in
            guard let index = s.tables[change.table] else { return [] }
            var candidates = index.scan
            for (column, byValue) in index.eq {
                if let v = Values.filterText(record[column]), let subs = byValue[v] { candidates.formUnion(subs) }
            }
            var out: [Delivery] = []
            for key in candidates {
                guard let m = s.channels[key.connection]?[key.topic] else { continue }
                let ids = m.bindings.filter { $0.matches(change) }.map(\.id)
                if !ids.isEmpty { out.append(Delivery(connection: key.connection, topic: key.topic, ids: ids, member: m)) }
            }
            return out
        }
    }

    /// Sends `change` to each of `deliveries` (already checked against RLS),
    /// closing channels whose token expired instead.
    func deliver(_ change: ChangeEvent, to deliveries: [Delivery]) {
        guard !deliveries.isEmpty else { return }
        let now = clock.wallNow()
        // Its members in one array, keys in order (no object rebuilt member by member).
        var data: [JSONValue.Member] = [.init("columns", columns[change.table] ?? []),
                                        .init("commit_timestamp", .string(change.commitTimestamp)), .init("errors", .null)]
        if change.type != "INSERT" { data.append(.init("old_record", change.oldRecordJSON)) }
        data += [.init("record", change.type == "DELETE" ? [:] : change.recordJSON), .init("schema", "public"),
                 .init("table", .string(change.table)), .init("type", .string(change.type))]
        // The change is written once; each subscriber's frame only wraps it with its topic and ids.
        let written = JSONValue.object(data).text
        for d in deliveries {
            if let exp = d.member.expiresAt, exp <= now {
                expire(d.connection, topic: d.topic, secondsAgo: Int(now - exp))
                continue
            }
            let payload = #"{"data":"# + written + #","ids":["# + d.ids.map(String.init).joined(separator: ",") + "]}"
            sendText(d.connection, PhoenixFrame.text(topic: d.topic, event: PhoenixFrame.Event.postgresChanges, payloadText: payload))
        }
    }

    /// Closes a channel whose access token has expired, as Supabase does.
    func expire(_ id: ConnectionID, topic: String, secondsAgo: Int) {
        let name = member(id, topic: topic)?.channelName ?? topic
        send(id, .system(topic, status: "error", message: "Token has expired \(max(0, secondsAgo)) seconds ago", channel: name,
                         extension: "system"))
        send(id, PhoenixFrame(topic: topic, event: PhoenixFrame.Event.close))
        leave(id, topic: topic)
    }

    private static func columns(of table: Schema.Table) -> JSONValue {
        .array(table.columns.map { ["name": .string($0.name), "type": .string(shortType($0.type))] })
    }

    private static func shortType(_ t: Schema.ColumnType) -> String {
        switch t {
        case .uuid: "uuid"
        case .text: "text"
        case .bigint: "int8"
        case .timestamptz: "timestamptz"
        case .double: "float8"
        case .other(let name): name
        }
    }

    private static func index(_ s: inout State, _ key: SubKey, _ bindings: [ChangeBinding]) {
        for b in bindings {
            if let column = b.column, case .eq(let v)? = b.op {
                s.tables[b.table, default: TableIndex()].eq[column, default: [:]][v, default: []].insert(key)
            } else {
                s.tables[b.table, default: TableIndex()].scan.insert(key)
            }
        }
    }

    private static func unindex(_ s: inout State, _ key: SubKey, _ bindings: [ChangeBinding]) {
        for b in bindings {
            if let column = b.column, case .eq(let v)? = b.op {
                s.tables[b.table]?.eq[column]?[v]?.remove(key)
                if s.tables[b.table]?.eq[column]?[v]?.isEmpty == true { s.tables[b.table]?.eq[column]?[v] = nil }
            } else {
                s.tables[b.table]?.scan.remove(key)
            }
        }
    }
}
