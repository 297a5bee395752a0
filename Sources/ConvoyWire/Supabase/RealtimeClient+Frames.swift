import ConvoyFormats
import ConvoyJSON
import ConvoyTime
import Foundation
import Synchronization

extension RealtimeClient {
    /// One frame read off the socket, as an event.
    func receive(_ text: String) {
        let receivedAt = clock.wallNow()
        let bytes = text.utf8.count + Self.frameOverhead
        // The frames every phone reads most (a change, a heartbeat's reply) are read straight from the bytes;
        // whatever that path does not take (another event, a value it does not carry as text) is read below.
        if Self.mayBeHot(text), let value = JSONScanner.parse(text), receiveHot(value, receivedAt: receivedAt, bytes: bytes) { return }
        guard let frame = PhoenixFrame(text: text) else { return }
        let topic = frame.topic
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
        if topic == PhoenixFrame.heartbeatTopic { return heartbeatReply(ref: ref) }
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

    private func heartbeatReply(ref: String?) {
        let sent = state.withLock { s -> Double? in
            guard let p = s.pendingHeartbeat, p.ref == ref else { return nil }
            s.pendingHeartbeat = nil
            return p.sent
        }
        if let sent { sink.yield(.heartbeat(roundTrip: clock.now() - sent)) }
    }

    // MARK: - The hot frames

    /// Whether the text names an event `receiveHot` takes (a cheap look at the bytes; a miss only means the slower reader).
    static func mayBeHot(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { b in contains(b, hotChanges) || (contains(b, hotReply) && contains(b, hotPhoenix)) }
    }

    private static let hotChanges = Array(#""event":"postgres_changes""#.utf8)
    private static let hotReply = Array(#""event":"phx_reply""#.utf8)
    private static let hotPhoenix = Array(#""topic":"phoenix""#.utf8)

    private static func contains(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, haystack.count >= needle.count else { return false }
        var i = 0
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first {
                var j = 1
                while j < needle.count, haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return true }
            }
            i += 1
        }
        return false
    }

    /// A `postgres_changes` push or a heartbeat's reply, read from `JSONScanner`'s value exactly as the
    /// general path reads it from `JSONSerialization`'s; false to leave the frame to that path.
    func receiveHot(_ value: JSONValue, receivedAt: Double, bytes: Int) -> Bool {
        guard let topic = value["topic"]?.string, let event = value["event"]?.string else { return false }
        switch event {
        case PhoenixFrame.Event.postgresChanges:
            guard let data = value["payload"]?["data"] else { return true }  // not a change: nothing to read, as below
            guard case .object = data else { return true }
            var record: [String: String] = [:]
            if case .object(let members)? = data["record"] {
                record.reserveCapacity(members.count)
                for m in members {
                    switch m.value {
                    case .string(let s): record[m.key] = s
                    case .null: record[m.key] = nil
                    case .bool(let b): record[m.key] = b ? "true" : "false"
                    case .number(let n):
                        guard let text = PhoenixFrame.integerText(n) else { return false }
                        record[m.key] = text
                    case .array, .object: return false
                    }
                }
            }
            sink.yield(.change(topic: topic, Change(type: data["type"]?.string ?? "", table: data["table"]?.string ?? "",
                                                    commitTimestamp: data["commit_timestamp"]?.string ?? "",
                                                    record: record, receivedAt: receivedAt, bytes: bytes)))
            return true
        case PhoenixFrame.Event.reply where topic == PhoenixFrame.heartbeatTopic:
            let ref: String?
            switch value["ref"] {
            case .string(let s)?: ref = s
            case .number(let n)?:
                guard let text = PhoenixFrame.integerText(n) else { return false }
                ref = text
            default: ref = nil
            }
            heartbeatReply(ref: ref)
            return true
        default:
            return false
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
