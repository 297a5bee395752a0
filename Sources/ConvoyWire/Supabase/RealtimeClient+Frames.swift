import Foundation
import Synchronization

extension RealtimeClient {
    /// One frame read off the socket, as an event.
    func receive(_ text: String) {
        let receivedAt = clock.wallNow()
        guard let frame = PhoenixFrame(text: text) else { return }
        let topic = frame.topic
        let bytes = text.utf8.count + Self.frameOverhead
        typealias Event = PhoenixFrame.Event
        switch frame.event {
        case Event.postgresChanges:
            guard let change = frame.change else { return }
            sink.yield(.change(topic: topic, Change(type: change.type, table: change.table, commitTimestamp: change.commitTimestamp,
                                                    record: change.record.compactMapValues(Self.text),
                                                    receivedAt: receivedAt, bytes: bytes)))
        case Event.broadcast:
            guard let event = frame.payload["event"] as? String else { return }
            let object = frame.payload["payload"] as? [String: Any] ?? [:]
            let json = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            sink.yield(.broadcast(topic: topic, Broadcast(event: event, payload: object.compactMapValues(Self.text), json: json,
                                                          receivedAt: receivedAt, bytes: bytes)))
        case Event.presenceState:
            sink.yield(.presence(topic: topic, .state(Self.presences(frame.payload), receivedAt: receivedAt)))
        case Event.presenceDiff:
            sink.yield(.presence(topic: topic, .diff(joins: Self.presences(frame.payload["joins"]),
                                                     leaves: Self.presences(frame.payload["leaves"]), receivedAt: receivedAt)))
        case Event.reply:
            reply(frame)
        case Event.system:
            let message = frame.message ?? ""
            if frame.status == "ok", message == PhoenixFrame.subscribedMessage {
                sink.yield(.subscribed(topic: topic))
            } else if frame.status == "error" {
                // e.g. "Token has expired …", followed by phx_close: one event for both.
                state.withLock { $0.channels[topic]?.joined = false }
                sink.yield(.channelClosed(topic: topic, reason: message))
            }
        case Event.close, Event.error:
            // A channel the server closed (or that crashed) while joined: the caller must join again.
            let known = state.withLock { s -> Bool in
                guard s.channels[topic]?.joined == true else { return false }
                s.channels[topic]?.joined = false
                return true
            }
            if known { sink.yield(.channelClosed(topic: topic, reason: frame.event == Event.error ? Event.error : "closed by the server")) }
        default:
            break
        }
    }

    /// A `phx_reply`: to a heartbeat (its round trip), to a join (joined or
    /// refused), or to another push (`pushReply`).
    private func reply(_ frame: PhoenixFrame) {
        let (topic, ref) = (frame.topic, frame.ref)
        if topic == PhoenixFrame.heartbeatTopic {
            let sent = state.withLock { s -> Double? in
                guard let p = s.pendingHeartbeat, p.ref == ref else { return nil }
                s.pendingHeartbeat = nil
                return p.sent
            }
            if let sent { sink.yield(.heartbeat(roundTrip: clock.now() - sent)) }
            return
        }
        let isJoin = state.withLock { s in s.channels[topic].map { $0.joinRef == ref } ?? false }
        let response = frame.response
        guard isJoin else {
            if let ref { sink.yield(.pushReply(topic: topic, ref: ref, status: frame.status ?? "error", reason: response["reason"] as? String)) }
            return
        }
        if frame.status == "ok" {
            let withChanges = !((response["postgres_changes"] as? [Any]) ?? []).isEmpty
            let expired = state.withLock { s -> [String] in
                s.channels[topic]?.joined = true
                return flushBuffered(topic, &s)
            }
            for r in expired { sink.yield(.pushReply(topic: topic, ref: r, status: "timeout", reason: "not joined within \(Self.pushTimeout) s")) }
            if !withChanges { sink.yield(.subscribed(topic: topic)) }
        } else {
            sink.yield(.joinFailed(topic: topic, reason: response["reason"] as? String ?? "join refused"))
        }
    }

    // MARK: - Frames

    static func joinFrame(_ topic: String, _ s: inout State) -> String {
        let ref = s.nextRef()
        s.channels[topic]?.joinRef = ref
        let channel = s.channels[topic]
        var config = (channel?.options ?? ChannelOptions()).config
        config["postgres_changes"] = channel?.bindings.map(\.json) ?? []
        return PhoenixFrame.join(topic, config: config, accessToken: s.token, ref: ref).text
    }

    static func text(_ value: Any) -> String? {
        switch value {
        case let s as String: return s
        case is NSNull: return nil
        case let n as NSNumber:
            return String(cString: n.objCType) == "c" ? (n.boolValue ? "true" : "false") : n.stringValue
        default:
            return (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
