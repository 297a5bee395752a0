import ConvoyFormats
import ConvoyJSON
import ConvoyTime
import Foundation
import Synchronization

extension RealtimeClient {
    /// One frame read off the socket, as an event. Every frame is read once, by `JSONScanner`, into a typed
    /// `JSONValue`; what the phone keeps of it (a change's record, a broadcast's payload, presences) is read from that.
    func receive(_ text: String) {
        let receivedAt = clock.wallNow()
        let bytes = text.utf8.count + Self.frameOverhead
        guard let frame = JSONScanner.parse(text, maxDepth: JSONScanner.foundationDepth), let topic = frame["topic"]?.string, let event = frame["event"]?.string else { return }
        let payload = frame["payload"] ?? .object([])
        typealias Event = PhoenixFrame.Event
        switch event {
        case Event.postgresChanges:
            guard let data = payload["data"], case .object = data else { return }
            sink.yield(.change(topic: topic, Change(type: data["type"]?.string ?? "", table: data["table"]?.string ?? "",
                                                    commitTimestamp: data["commit_timestamp"]?.string ?? "",
                                                    record: Self.flat(data["record"]), receivedAt: receivedAt, bytes: bytes)))
        case Event.broadcast:
            guard let event = payload["event"]?.string else { return }
            var object = payload["payload"] ?? .object([])
            if case .object = object {} else { object = .object([]) }
            sink.yield(.broadcast(topic: topic, Broadcast(event: event, payload: Self.flat(object), json: object.text,
                                                          receivedAt: receivedAt, bytes: bytes)))
        case Event.presenceState:
            sink.yield(.presence(topic: topic, .state(Self.presences(payload), receivedAt: receivedAt)))
        case Event.presenceDiff:
            sink.yield(.presence(topic: topic, .diff(joins: Self.presences(payload["joins"]), leaves: Self.presences(payload["leaves"]),
                                                     receivedAt: receivedAt)))
        case Event.reply:
            reply(topic: topic, ref: Self.ref(frame["ref"]), payload: payload)
        case Event.system:
            let message = payload["message"]?.string ?? ""
            let status = payload["status"]?.string
            if status == "ok", message == PhoenixFrame.subscribedMessage {
                sink.yield(.subscribed(topic: topic))
            } else if status == "error" {
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
            if known { sink.yield(.channelClosed(topic: topic, reason: event == Event.error ? Event.error : "closed by the server")) }
        default:
            break
        }
    }

    /// A `phx_reply`: to a heartbeat (its round trip), to a join (joined or
    /// refused), or to another push (`pushReply`).
    private func reply(topic: String, ref: String?, payload: JSONValue) {
        if topic == PhoenixFrame.heartbeatTopic { return heartbeatReply(ref: ref) }
        let isJoin = state.withLock { s in s.channels[topic].map { $0.joinRef == ref } ?? false }
        let status = payload["status"]?.string
        let response = payload["response"]
        guard isJoin else {
            if let ref { sink.yield(.pushReply(topic: topic, ref: ref, status: status ?? "error", reason: response?["reason"]?.string)) }
            return
        }
        if status == "ok" {
            let withChanges = !(response?["postgres_changes"]?.items ?? []).isEmpty
            let expired = state.withLock { s -> [String] in
                s.channels[topic]?.joined = true
                return flushBuffered(topic, &s)
            }
            for r in expired { sink.yield(.pushReply(topic: topic, ref: r, status: "timeout", reason: "not joined within \(Self.pushTimeout) s")) }
            if !withChanges { sink.yield(.subscribed(topic: topic)) }
        } else {
            sink.yield(.joinFailed(topic: topic, reason: response?["reason"]?.string ?? "join refused"))
        }
    }

    private func heartbeatReply(ref: String?) {
        let sent = state.withLock { s -> Double? in
            guard let p = s.pendingHeartbeat, p.ref == ref else { return nil }
            s.pendingHeartbeat = nil
            return p.sent
        }
        if let sent { sink.yield(.heartbeat(roundTrip: clock.now() - sent)) }
    }

    /// A frame's `ref`: a string, or a number's literal; nil otherwise.
    static func ref(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let s)?: s
        case .number(let n)?: n
        default: nil
        }
    }

    /// An object's members as text (`JSONValue.flatText`: numbers as written, nested values as JSON, nulls left out).
    static func flat(_ value: JSONValue?) -> [String: String] {
        guard case .object(let members)? = value else { return [:] }
        var out: [String: String] = [:]
        out.reserveCapacity(members.count)
        for m in members { out[m.key] = m.value.flatText }
        return out
    }

    // MARK: - Frames

    static func joinFrame(_ topic: String, _ s: inout State) -> String {
        let ref = s.nextRef()
        s.channels[topic]?.joinRef = ref
        let channel = s.channels[topic]
        let config = (channel?.options ?? ChannelOptions()).config(bindings: channel?.bindings ?? [])
        return PhoenixFrame.join(topic, config: config, accessToken: s.token, ref: ref).text
    }
}
