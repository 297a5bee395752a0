import ConvoyJSON
import Foundation

/// A Phoenix v1 JSON frame (`vsn=1.0.0`), as Supabase Realtime and
/// realtime-js exchange them: `{"topic","event","payload","ref","join_ref"}`.
/// The one model of a frame: Convoy's Realtime client (and the probes, which
/// subscribe through it) writes and reads these, and `convoy serve` reads and
/// writes the same. A client's frames carry a `ref` (and a `join_ref` on
/// channel frames); a server's push has a null `ref` and no `join_ref`, as
/// Supabase's do.
public struct PhoenixFrame: @unchecked Sendable {
    public var topic: String
    public var event: String
    /// JSON values (`JSONSerialization`'s: String, NSNumber, NSNull, arrays and dictionaries of them).
    public var payload: [String: Any]
    public var ref: String?
    public var joinRef: String?

    public init(topic: String, event: String, payload: [String: Any] = [:], ref: String? = nil, joinRef: String? = nil) {
        (self.topic, self.event, self.payload, self.ref, self.joinRef) = (topic, event, payload, ref, joinRef)
    }

    /// Reads a frame; nil when the text is not one (not JSON, or no topic or event).
    /// A numeric `ref` reads as its text, a missing payload as empty.
    public init?(text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let topic = object["topic"] as? String, let event = object["event"] as? String
        else { return nil }
        self.init(topic: topic, event: event, payload: object["payload"] as? [String: Any] ?? [:],
                  ref: Self.refText(object["ref"]), joinRef: Self.refText(object["join_ref"]))
    }

    /// A frame with a typed payload as sent: keys sorted (as `text` writes them), `ref` null when there is none, `join_ref` only
    /// when there is one. The client's pushes are written so, without a `[String: Any]` in between.
    public static func text(topic: String, event: String, payload: JSONValue, ref: String?, joinRef: String? = nil) -> String {
        var members: [JSONValue.Member] = [.init("event", .string(event))]
        if let joinRef { members.append(.init("join_ref", .string(joinRef))) }
        members += [.init("payload", payload), .init("ref", ref.map(JSONValue.string) ?? .null), .init("topic", .string(topic))]
        return JSONValue.object(members).text
    }

    /// `phx_join` with the channel's config (`postgres_changes` bindings, broadcast and presence settings) and the token, typed.
    public static func joinText(_ topic: String, config: JSONValue, accessToken: String?, ref: String) -> String {
        var payload: [JSONValue.Member] = []
        if let accessToken { payload.append(.init("access_token", .string(accessToken))) }
        payload.append(.init("config", config))
        return text(topic: topic, event: Event.join, payload: .object(payload), ref: ref, joinRef: ref)
    }

    /// The frame as sent: keys sorted, `ref` null when there is none, `join_ref` only when there is one
    /// (`JSONSerialization`'s text with sorted keys, written by `SortedJSON`).
    public var text: String { SortedJSON.text(object) ?? "" }

    /// The frame as one JSON object.
    public var object: [String: Any] {
        var object: [String: Any] = ["topic": topic, "event": event, "payload": payload, "ref": ref ?? NSNull()]
        if let joinRef { object["join_ref"] = joinRef }
        return object
    }

    /// The topic, event and ref of a frame, read by `JSONScanner` as `init(text:)` reads them; nil when the
    /// text is not a frame, or its ref is a number `init(text:)` would write its own way (not an integer).
    public static func head(_ text: String) -> (topic: String, event: String, ref: String?)? {
        guard let value = JSONScanner.parse(text), let topic = value["topic"]?.string, let event = value["event"]?.string else { return nil }
        switch value["ref"] {
        case .string(let s)?: return (topic, event, s)
        case .number(let n)?:
            guard let ref = integerText(n) else { return nil }
            return (topic, event, ref)
        default: return (topic, event, nil)
        }
    }

    /// An integer literal as `NSNumber` writes it (itself, up to 18 digits); nil for anything else.
    public static func integerText(_ literal: String) -> String? {
        let u = literal.utf8
        let digits = u.first == UInt8(ascii: "-") ? u.dropFirst() : u[...]
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              digits.first != UInt8(ascii: "0") || digits.count == 1, literal != "-0" else { return nil }
        return literal
    }

    private static func refText(_ value: Any?) -> String? {
        switch value {
        case let s as String: s
        case let n as NSNumber: n.stringValue
        default: nil
        }
    }
}

// MARK: - Events and topics

extension PhoenixFrame {
    /// The events Supabase Realtime's protocol uses.
    public enum Event {
        public static let join = "phx_join"
        public static let leave = "phx_leave"
        public static let reply = "phx_reply"
        public static let close = "phx_close"
        public static let error = "phx_error"
        public static let heartbeat = "heartbeat"
        public static let accessToken = "access_token"
        public static let system = "system"
        public static let postgresChanges = "postgres_changes"
        public static let broadcast = "broadcast"
        public static let presence = "presence"
        public static let presenceState = "presence_state"
        public static let presenceDiff = "presence_diff"
    }

    /// The topic heartbeats go to.
    public static let heartbeatTopic = "phoenix"
    /// The `system` message that says a channel's `postgres_changes` are live.
    public static let subscribedMessage = "Subscribed to PostgreSQL"

    // MARK: Frames a client sends

    /// `phx_join` with the channel's config (`postgres_changes` bindings, broadcast and presence settings) and the token.
    public static func join(_ topic: String, config: [String: Any], accessToken: String?, ref: String) -> PhoenixFrame {
        var payload: [String: Any] = ["config": config]
        if let accessToken { payload["access_token"] = accessToken }
        return PhoenixFrame(topic: topic, event: Event.join, payload: payload, ref: ref, joinRef: ref)
    }

    public static func heartbeat(ref: String) -> PhoenixFrame {
        PhoenixFrame(topic: heartbeatTopic, event: Event.heartbeat, ref: ref)
    }

    /// `heartbeat(ref:).text` without `JSONSerialization` (a phone sends one every 25 s); `ref` is the
    /// client's counter, digits only.
    public static func heartbeatText(ref: String) -> String {
        precondition(ref.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }, "a heartbeat's ref is a counter")
        return #"{"event":"heartbeat","payload":{},"ref":""# + ref + #"","topic":"phoenix"}"#
    }

    // MARK: Frames a server sends

    /// A reply to the client frame with `ref`: `{"status", "response"}`.
    public static func reply(_ topic: String, ref: String?, status: String = "ok", response: [String: Any] = [:]) -> PhoenixFrame {
        PhoenixFrame(topic: topic, event: Event.reply, payload: ["status": status, "response": response], ref: ref)
    }

    /// A `system` message on a channel (`status` ok or error, the extension, a message).
    public static func system(_ topic: String, status: String, message: String, channel: String,
                              extension ext: String = Event.postgresChanges) -> PhoenixFrame {
        PhoenixFrame(topic: topic, event: Event.system,
                     payload: ["status": status, "message": message, "channel": channel, "extension": ext])
    }

    // MARK: Reading a server's frames

    /// A reply's `status` (`ok` or `error`).
    public var status: String? { payload["status"] as? String }
    /// A reply's `response`.
    public var response: [String: Any] { payload["response"] as? [String: Any] ?? [:] }
    /// A `system` message's text.
    public var message: String? { payload["message"] as? String }

    /// A `postgres_changes` push's change: `payload.data` (`type`, `table`, `commit_timestamp`, `record`, `old_record`).
    public var change: (type: String, table: String, commitTimestamp: String, record: [String: Any])? {
        guard event == Event.postgresChanges, let data = payload["data"] as? [String: Any] else { return nil }
        return (data["type"] as? String ?? "", data["table"] as? String ?? "", data["commit_timestamp"] as? String ?? "",
                data["record"] as? [String: Any] ?? [:])
    }
}
