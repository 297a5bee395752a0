import ConvoyJSON

/// A Phoenix v1 JSON frame (`vsn=1.0.0`), as Supabase Realtime and
/// realtime-js exchange them: `{"topic","event","payload","ref","join_ref"}`.
/// The one model of a frame: Convoy's Realtime client writes these, and
/// `convoy serve` reads and writes the same. A client's frames carry a `ref`
/// (and a `join_ref` on channel frames); a server's push has a null `ref` and
/// no `join_ref`, as Supabase's do. The payload is typed (`JSONValue`): read
/// once by `JSONScanner`, written once, never through `[String: Any]`.
public struct PhoenixFrame: Sendable, Equatable {
    public var topic: String
    public var event: String
    /// The payload object (an empty one when the frame had none, or one that was not an object).
    public var payload: JSONValue
    public var ref: String?
    public var joinRef: String?

    public init(topic: String, event: String, payload: JSONValue = .object([]), ref: String? = nil, joinRef: String? = nil) {
        (self.topic, self.event, self.payload, self.ref, self.joinRef) = (topic, event, payload, ref, joinRef)
    }

    /// Reads a frame; nil when the text is not one (not JSON, or no topic or event).
    /// A numeric `ref` reads as its literal, a missing payload (or one that is not an object) as empty.
    public init?(text: String) {
        guard let value = JSONScanner.parse(text, maxDepth: JSONScanner.foundationDepth), let topic = value["topic"]?.string,
              let event = value["event"]?.string else { return nil }
        var payload = value["payload"] ?? .object([])
        if case .object = payload {} else { payload = .object([]) }
        self.init(topic: topic, event: event, payload: payload, ref: Self.refText(value["ref"]), joinRef: Self.refText(value["join_ref"]))
    }

    /// The frame as sent: keys sorted, `ref` null when there is none, `join_ref` only when there is one.
    public var text: String { Self.text(topic: topic, event: event, payload: payload, ref: ref, joinRef: joinRef) }

    /// A frame as sent: keys sorted, `ref` null when there is none, `join_ref` only when there is one.
    public static func text(topic: String, event: String, payload: JSONValue, ref: String?, joinRef: String? = nil) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(96)
        write(topic: topic, event: event, ref: ref, joinRef: joinRef, into: &out) { payload.write(into: &$0) }
        return String(decoding: out, as: UTF8.self)
    }

    /// A frame whose payload is JSON text already written (a change, written once for all its subscribers).
    public static func text(topic: String, event: String, payloadText: String, ref: String? = nil) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(payloadText.utf8.count + topic.utf8.count + 64)
        write(topic: topic, event: event, ref: ref, joinRef: nil, into: &out) { $0.append(contentsOf: payloadText.utf8) }
        return String(decoding: out, as: UTF8.self)
    }

    private static func write(topic: String, event: String, ref: String?, joinRef: String?, into out: inout [UInt8],
                              payload: (inout [UInt8]) -> Void) {
        out.append(contentsOf: #"{"event":"#.utf8)
        JSONValue.write(string: event, into: &out)
        if let joinRef {
            out.append(contentsOf: #","join_ref":"#.utf8)
            JSONValue.write(string: joinRef, into: &out)
        }
        out.append(contentsOf: #","payload":"#.utf8)
        payload(&out)
        out.append(contentsOf: #","ref":"#.utf8)
        if let ref { JSONValue.write(string: ref, into: &out) } else { out.append(contentsOf: "null".utf8) }
        out.append(contentsOf: #","topic":"#.utf8)
        JSONValue.write(string: topic, into: &out)
        out.append(UInt8(ascii: "}"))
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

    private static func refText(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let s)?: s
        case .number(let n)?: n
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
    public static func join(_ topic: String, config: JSONValue, accessToken: String?, ref: String) -> PhoenixFrame {
        var payload: [JSONValue.Member] = []
        if let accessToken { payload.append(.init("access_token", .string(accessToken))) }
        payload.append(.init("config", config))
        return PhoenixFrame(topic: topic, event: Event.join, payload: .object(payload), ref: ref, joinRef: ref)
    }

    public static func heartbeat(ref: String) -> PhoenixFrame {
        PhoenixFrame(topic: heartbeatTopic, event: Event.heartbeat, ref: ref)
    }

    /// `heartbeat(ref:).text` written directly (a phone sends one every 25 s); `ref` is the client's counter,
    /// digits only.
    public static func heartbeatText(ref: String) -> String {
        precondition(ref.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }, "a heartbeat's ref is a counter")
        return #"{"event":"heartbeat","payload":{},"ref":""# + ref + #"","topic":"phoenix"}"#
    }

    // MARK: Frames a server sends

    /// A reply to the client frame with `ref`: `{"response", "status"}`.
    public static func reply(_ topic: String, ref: String?, status: String = "ok", response: JSONValue = .object([])) -> PhoenixFrame {
        PhoenixFrame(topic: topic, event: Event.reply, payload: ["response": response, "status": .string(status)], ref: ref)
    }

    /// A `system` message on a channel (`status` ok or error, the extension, a message).
    public static func system(_ topic: String, status: String, message: String, channel: String,
                              extension ext: String = Event.postgresChanges) -> PhoenixFrame {
        PhoenixFrame(topic: topic, event: Event.system,
                     payload: ["channel": .string(channel), "extension": .string(ext), "message": .string(message), "status": .string(status)])
    }

    // MARK: Reading a server's frames

    /// A reply's `status` (`ok` or `error`).
    public var status: String? { payload["status"]?.string }
    /// A reply's `response`.
    public var response: JSONValue { payload["response"] ?? .object([]) }
    /// A `system` message's text.
    public var message: String? { payload["message"]?.string }

    /// A `postgres_changes` push's change: `payload.data` (`type`, `table`, `commit_timestamp`, `record`, `old_record`).
    public var change: (type: String, table: String, commitTimestamp: String, record: JSONValue)? {
        guard event == Event.postgresChanges, let data = payload["data"], case .object = data else { return nil }
        return (data["type"]?.string ?? "", data["table"]?.string ?? "", data["commit_timestamp"]?.string ?? "",
                data["record"] ?? .object([]))
    }
}
