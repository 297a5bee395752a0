import ConvoyFormats
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

        var config: [String: Any] {
            ["broadcast": ["ack": broadcastAck, "self": broadcastSelf], "presence": ["key": presenceKey], "private": isPrivate]
        }
    }

    /// A broadcast received: its event and its payload's top-level values as
    /// text (numbers and booleans as their JSON text, objects as JSON).
    public struct Broadcast: Sendable {
        public var event: String
        public var payload: [String: String]
        /// The payload as JSON (keys sorted), numbers as numbers.
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
    public func broadcast(_ topic: String, event: String, payload: [String: Any]) -> String? {
        push(topic, event: PhoenixFrame.Event.broadcast, payload: ["type": "broadcast", "event": event, "payload": payload])
    }

    /// Tracks this connection's presence on the channel with `meta` (waiting for the join as a broadcast does); the push's ref.
    @discardableResult
    public func track(_ topic: String, meta: [String: Any]) -> String? {
        push(topic, event: PhoenixFrame.Event.presence, payload: ["type": "presence", "event": "track", "payload": meta])
    }

    /// Ends this connection's presence on the channel; the push's ref.
    @discardableResult
    public func untrack(_ topic: String) -> String? {
        push(topic, event: PhoenixFrame.Event.presence, payload: ["type": "presence", "event": "untrack"])
    }

    /// Whether `topic` is joined now (its join was answered ok on this connection).
    public func isJoined(_ topic: String) -> Bool {
        state.withLock { $0.channels[topic]?.joined == true && $0.outgoing != nil }
    }

    /// realtime-js's push timeout, seconds.
    public static let pushTimeout = 10.0
    /// Most pushes a channel keeps while it is not joined.
    public static let maxBuffered = 256

    private func push(_ topic: String, event: String, payload: [String: Any]) -> String? {
        let boxed = UncheckedPayload(value: payload)
        let now = clock.now()
        let (ref, expired) = state.withLock { s -> (String?, [String]) in
            guard var channel = s.channels[topic] else { return (nil, []) }
            let ref = s.nextRef()
            if channel.joined, let out = s.outgoing {
                out.send(PhoenixFrame(topic: topic, event: event, payload: boxed.value, ref: ref, joinRef: channel.joinRef).text)
                return (ref, [])
            }
            var expired = channel.buffered.filter { now - $0.at > Self.pushTimeout }.map(\.ref)
            channel.buffered.removeAll { now - $0.at > Self.pushTimeout }
            if channel.buffered.count >= Self.maxBuffered { expired.append(channel.buffered.removeFirst().ref) }
            channel.buffered.append(Buffered(ref: ref, event: event, payload: boxed.value, at: now))
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
                out.send(PhoenixFrame(topic: topic, event: b.event, payload: b.payload, ref: b.ref, joinRef: channel.joinRef).text)
            }
        }
        channel.buffered = []
        s.channels[topic] = channel
        return expired
    }

    private struct UncheckedPayload: @unchecked Sendable { let value: [String: Any] }

    /// A presence map as the server sends it (key → `{"metas": [...]}`), in text.
    static func presences(_ value: Any?) -> Presences {
        guard let map = value as? [String: Any] else { return [:] }
        var out: Presences = [:]
        for (key, entry) in map {
            let metas = (entry as? [String: Any])?["metas"] as? [[String: Any]] ?? []
            out[key] = metas.map { $0.compactMapValues(Self.text) }
        }
        return out
    }
}
