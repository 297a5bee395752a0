import ConvoyJSON
import ConvoyWire
import Synchronization

/// Survale's direct messages (spec §2: "DMs optional/ephemeral"; §6: "DMs via ephemeral WebSocket relay (no
/// storage)"): a broadcast on a private channel of the two, `op_{operation}_dm_{a}_{b}` (their user ids in
/// order), which Realtime Authorization opens to those two alone while both are members of the running
/// operation. Nothing is stored: a member off its network misses it. Any two members of an operation exchange them
/// (the case agent is one of them).
extension SurvaleApp {
    static let directEvent = "dm"

    static func directTopic(_ operation: String, _ a: String, _ b: String) -> String {
        let (lo, hi) = a < b ? (a, b) : (b, a)
        return "realtime:op_\(operation)_dm_\(lo)_\(hi)"
    }

    public func directPartners(of userID: String) -> [String] {
        members.withLock { m in
            guard let me = m[userID] else { return [] }
            return m.filter { $0.key != userID && $0.value.operation == me.operation }.map(\.key).sorted()
        }
    }

    public func directChannel(for userID: String, with partner: String) -> AppSubscription? {
        guard let operation = operation(of: userID), directPartners(of: userID).contains(partner) else { return nil }
        return AppSubscription(topic: Self.directTopic(operation, userID, partner), bindings: [], options: RealtimeClient.ChannelOptions(isPrivate: true))
    }

    public func sendDirect(_ message: GroupMessage, to userID: String, from session: Session, realtime: RealtimeClient?) throws(SupabaseError) -> Int {
        guard let operation = operation(of: session.userID), let realtime else { throw SupabaseError(kind: .notJoined, message: "no operation channel") }
        let topic = Self.directTopic(operation, session.userID, userID)
        let payload: JSONValue = ["from": .string(session.userID), "to": .string(userID), "seq": JSONValue(Int64(message.seq)),
                                  "sent_ns": JSONValue(message.sentNanos), "text": .string(message.text)]
        guard realtime.broadcast(topic, event: Self.directEvent, payload: payload) != nil else {
            throw SupabaseError(kind: .notJoined, message: "\(topic) is not joined")
        }
        return payload.text.utf8.count + topic.utf8.count + 120
    }

    /// A direct message as it arrived, addressed to `me` (one for someone else on a pair's channel is not possible: malformed).
    func direct(_ broadcast: RealtimeClient.Broadcast) -> Incoming {
        guard let from = broadcast.payload["from"], let seq = broadcast.payload["seq"].flatMap({ UInt64($0) }),
              let sent = broadcast.payload["sent_ns"].flatMap({ Int64($0) }) else { return .malformed }
        return .directMessage(sender: from, GroupMessage(seq: seq, sentNanos: sent, text: broadcast.payload["text"] ?? ""))
    }
}
