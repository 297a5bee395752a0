import ConvoyFormats
import ConvoyJSON
import ConvoyTime
import Foundation
import Synchronization

/// Broadcast and presence, as realtime-js sends them: a broadcast push is
/// `{"type":"broadcast","event","payload"}` on event `broadcast`; presence is
/// `{"type":"presence","event":"track"|"untrack","payload"}` on event
/// `presence`. The server answers a presence push, and a broadcast only on a
/// channel joined with `ack`.
extension RealtimeClient {
    /// How a channel is joined: private (Realtime Authorization), whether its
    /// own broadcasts come back (`self`) and are acknowledged (`ack`), and its
    /// presence key (empty: the server picks one).
    public struct ChannelOptions: Sendable, Equatable {
        public var isPrivate: Bool
        public var broadcastSelf: Bool
        public var broadcastAck: Bool
        public var presenceKey: String

        public init(isPrivate: Bool = false, broadcastSelf: Bool = false, broadcastAck: Bool = false, presenceKey: String = "") {
            (self.isPrivate, self.broadcastSelf, self.broadcastAck, self.presenceKey) = (isPrivate, broadcastSelf, broadcastAck, presenceKey)
        }

        /// The join's `config`, keys sorted as realtime-js's frames are read back.
        func config(bindings: [Binding]) -> JSONValue {
            ["broadcast": ["ack": .bool(broadcastAck), "self": .bool(broadcastSelf)], "postgres_changes": .array(bindings.map(\.json)),
             "presence": ["key": .string(presenceKey)], "private": .bool(isPrivate)]
        }
    }

    /// A broadcast received: its event and its payload's top-level values as
    /// text (numbers and booleans as their JSON text, objects as JSON).
    public struct Broadcast: Sendable {
        public var event: String
        public var payload: [String: String]
        /// The payload as JSON, as it came (members in the sender's order, numbers as written).
        public var json: String
        /// When its message was read off the socket, on the client's clock (Unix seconds by default).
        public var receivedAt: Double
        /// The websocket message's size, bytes (for the battery model).
        public var bytes: Int
    }

    /// One presence key's metas, each as its top-level values in text (`phx_ref` among them).
    public typealias Presences = [String: [[String: String]]]

    public enum PresenceEvent: Sendable {
        /// Everyone present, as the server sends it after a join.
        case state(Presences, receivedAt: Double)
        /// Who came and who went since.
        case diff(joins: Presences, leaves: Presences, receivedAt: Double)
    }

    /// Sends a broadcast on a channel this client has joined (or is joining); its ref. Its reply
    /// arrives as `pushReply` when the channel was joined with `ack`. Made while the channel is not
    /// joined (connecting, rejoining), it waits and goes out once it is, as realtime-js buffers it;
    /// not joined within `pushTimeout`, it is given up: `pushReply` with status `timeout`. Nil for a
    /// channel never asked for (nothing is sent).
    @discardableResult
    public func broadcast(_ topic: String, event: String, payload: JSONValue) -> String? {
        push(topic, event: PhoenixFrame.Event.broadcast, payload: ["event": .string(event), "payload": payload, "type": "broadcast"])
    }

    /// Tracks this connection's presence on the channel with `meta` (waiting for the join as a broadcast does); the push's ref.
    @discardableResult
    public func track(_ topic: String, meta: JSONValue) -> String? {
        push(topic, event: PhoenixFrame.Event.presence, payload: ["event": "track", "payload": meta, "type": "presence"])
    }

    /// Ends this connection's presence on the channel; the push's ref.
    @discardableResult
    public func untrack(_ topic: String) -> String? {
        push(topic, event: PhoenixFrame.Event.presence, payload: ["event": "untrack", "type": "presence"])
    }

    /// Whether `topic` is joined now (its join was answered ok on this connection).
    public func isJoined(_ topic: String) -> Bool {
        state.withLock { $0.channels[topic]?.joined == true && $0.outgoing != nil }
    }

    /// realtime-js's push timeout, seconds.
    public static let pushTimeout = 10.0
    /// Most pushes a channel keeps while it is not joined.
    public static let maxBuffered = 256

    private func push(_ topic: String, event: String, payload: JSONValue) -> String? {
        let now = clock.now()
        let (ref, expired) = state.withLock { s -> (String?, [String]) in
            guard var channel = s.channels[topic] else { return (nil, []) }
            let ref = s.nextRef()
            if channel.joined, let out = s.outgoing {
                out.send(PhoenixFrame.text(topic: topic, event: event, payload: payload, ref: ref, joinRef: channel.joinRef))
                return (ref, [])
            }
            var expired = channel.buffered.filter { now - $0.at > Self.pushTimeout }.map(\.ref)
            channel.buffered.removeAll { now - $0.at > Self.pushTimeout }
            if channel.buffered.count >= Self.maxBuffered { expired.append(channel.buffered.removeFirst().ref) }
            channel.buffered.append(Buffered(ref: ref, event: event, payload: payload, at: now))
            s.channels[topic] = channel
            return (ref, expired)
        }
        for r in expired { sink.yield(.pushReply(topic: topic, ref: r, status: "timeout", reason: "not joined within \(Self.pushTimeout) s")) }
        return ref
    }

    /// The channel has just been joined: what waited goes out now, in order; what waited too long is given up.
    func flushBuffered(_ topic: String, _ s: inout State) -> [String] {
        guard var channel = s.channels[topic], let out = s.outgoing, !channel.buffered.isEmpty else { return [] }
        let now = clock.now()
        var expired: [String] = []
        for b in channel.buffered {
            if now - b.at > Self.pushTimeout {
                expired.append(b.ref)
            } else {
                out.send(PhoenixFrame.text(topic: topic, event: b.event, payload: b.payload, ref: b.ref, joinRef: channel.joinRef))
            }
        }
        channel.buffered = []
        s.channels[topic] = channel
        return expired
    }

    /// A presence map as the server sends it (key → `{"metas": [...]}`), in text.
    static func presences(_ value: JSONValue?) -> Presences {
        var out: Presences = [:]
        for entry in value?.members ?? [] {
            out[entry.key] = (entry.value["metas"]?.items ?? []).map { Self.flat($0) }
        }
        return out
    }
}
