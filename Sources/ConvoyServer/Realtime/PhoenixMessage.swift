import Foundation

/// A Phoenix v1 JSON frame (`vsn=1.0.0`): `{"topic","event","payload","ref","join_ref"}`.
/// Server frames carry no `join_ref`, as Supabase Realtime's do.
struct PhoenixMessage: @unchecked Sendable {
    var topic: String
    var event: String
    var payload: [String: Any]
    var ref: String?
    var joinRef: String?

    init(topic: String, event: String, payload: [String: Any], ref: String? = nil, joinRef: String? = nil) {
        self.topic = topic
        self.event = event
        self.payload = payload
        self.ref = ref
        self.joinRef = joinRef
    }

    /// Parses a client frame; nil when it is not one.
    init?(text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let topic = object["topic"] as? String, let event = object["event"] as? String
        else { return nil }
        self.topic = topic
        self.event = event
        payload = object["payload"] as? [String: Any] ?? [:]
        ref = Self.string(object["ref"])
        joinRef = Self.string(object["join_ref"])
    }

    private static func string(_ value: Any?) -> String? {
        switch value {
        case let s as String: s
        case let n as NSNumber: n.stringValue
        default: nil
        }
    }

    var text: String {
        let object: [String: Any] = ["topic": topic, "event": event, "payload": payload, "ref": ref ?? NSNull()]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    static func reply(_ topic: String, ref: String?, status: String = "ok", response: [String: Any] = [:]) -> PhoenixMessage {
        PhoenixMessage(topic: topic, event: "phx_reply", payload: ["status": status, "response": response], ref: ref)
    }
}
