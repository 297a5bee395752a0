import ConvoyWire
import Foundation

/// One websocket's conversation in Supabase Realtime's protocol: join and
/// leave channels, heartbeats, token refresh, broadcast and presence.
struct RealtimeSession: Sendable {
    let id: RealtimeHub.ConnectionID
    let hub: RealtimeHub
    let tokens: TokenService
    let clock: any ConvoyClock
    /// The connection's `apikey`, used when a join carries no access token.
    let apikey: String

    func handle(_ text: String) async {
        guard let m = PhoenixFrame(text: text) else { return }
        typealias Event = PhoenixFrame.Event
        switch (m.topic, m.event) {
        case (PhoenixFrame.heartbeatTopic, Event.heartbeat):
            hub.send(id, .reply(PhoenixFrame.heartbeatTopic, ref: m.ref))
            expireStaleChannels()
        case (_, Event.join): await join(m)
        case (_, Event.leave):
            hub.leave(id, topic: m.topic)
            hub.send(id, .reply(m.topic, ref: m.ref))
            hub.send(id, PhoenixFrame(topic: m.topic, event: Event.close))
        case (_, Event.accessToken): await refresh(m)
        case (_, Event.broadcast): broadcast(m)
        case (_, Event.presence): presence(m)
        default:
            hub.send(id, .reply(m.topic, ref: m.ref, status: "error", response: ["reason": "unknown event \(m.event)"]))
        }
    }

    private func join(_ m: PhoenixFrame) async {
        func refuse(_ reason: String) { hub.send(id, .reply(m.topic, ref: m.ref, status: "error", response: ["reason": reason])) }
        guard m.topic.hasPrefix("realtime:") else { return refuse("TopicNameRequired: topics start with realtime:") }
        let config = m.payload["config"] as? [String: Any] ?? [:]
        if config["private"] as? Bool == true {
            return refuse("PrivateChannelsNotSupported: convoy serve serves public channels")
        }
        let token = (m.payload["access_token"] as? String) ?? apikey
        let claims: Claims
        do {
            claims = try await tokens.verify(token)
        } catch .expired {
            return refuse("InvalidJWTToken: Token has expired")
        } catch {
            return refuse("InvalidJWTToken: Invalid token")
        }
        guard let principal = Principal(claims: claims) else { return refuse("InvalidJWTToken: Invalid role") }
        var bindings: [ChangeBinding] = []
        for object in config["postgres_changes"] as? [[String: Any]] ?? [] {
            do {
                bindings.append(try ChangeBinding(object, schema: hub.schema))
            } catch {
                return refuse("Unable to subscribe to changes with given parameters: \(error.reason)")
            }
        }
        let broadcast = config["broadcast"] as? [String: Any] ?? [:]
        let presenceKey = ((config["presence"] as? [String: Any])?["key"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        let name = String(m.topic.dropFirst("realtime:".count))
        let member = RealtimeHub.Member(
            principal: principal, expiresAt: claims.exp.map(Double.init), bindings: bindings,
            broadcastSelf: broadcast["self"] as? Bool ?? false, broadcastAck: broadcast["ack"] as? Bool ?? false,
            presenceKey: presenceKey ?? UUID().uuidString.lowercased(), channelName: name)
        guard hub.canJoin(id, topic: m.topic) else {
            return refuse("ChannelRateLimitReached: Too many channels (\(RealtimeHub.maxChannels) per connection)")
        }
        // Reply first, then index: a change can never reach the client before the
        // reply that tells it the binding ids (realtime-js would drop it).
        hub.send(id, .reply(m.topic, ref: m.ref, response: ["postgres_changes": bindings.map(\.echo)]))
        _ = hub.join(id, topic: m.topic, member: member)
        if !bindings.isEmpty {
            hub.send(id, .system(m.topic, status: "ok", message: PhoenixFrame.subscribedMessage, channel: name))
        }
        hub.send(id, PhoenixFrame(topic: m.topic, event: PhoenixFrame.Event.presenceState, payload: hub.presenceState(topic: m.topic)))
    }

    /// `access_token`: a fresh token for a joined channel; a bad one closes it.
    private func refresh(_ m: PhoenixFrame) async {
        guard hub.member(id, topic: m.topic) != nil, let token = m.payload["access_token"] as? String else { return }
        do {
            let claims = try await tokens.verify(token)
            guard let principal = Principal(claims: claims) else { throw TokenService.Failure.invalid("role") }
            hub.update(id, topic: m.topic) {
                $0.principal = principal
                $0.expiresAt = claims.exp.map(Double.init)
            }
        } catch {
            let name = hub.member(id, topic: m.topic)?.channelName ?? m.topic
            hub.send(id, .system(m.topic, status: "error", message: "Invalid JWT Token", channel: name, extension: "system"))
            hub.send(id, PhoenixFrame(topic: m.topic, event: PhoenixFrame.Event.close))
            hub.leave(id, topic: m.topic)
        }
    }

    private func broadcast(_ m: PhoenixFrame) {
        guard let member = hub.member(id, topic: m.topic) else {
            return hub.send(id, .reply(m.topic, ref: m.ref, status: "error", response: ["reason": "join the channel first"]))
        }
        hub.broadcast(from: id, topic: m.topic, payload: m.payload, includeSelf: member.broadcastSelf)
        if member.broadcastAck { hub.send(id, .reply(m.topic, ref: m.ref)) }
    }

    private func presence(_ m: PhoenixFrame) {
        guard let member = hub.member(id, topic: m.topic) else { return }
        switch m.payload["event"] as? String {
        case "track":
            var meta = m.payload["payload"] as? [String: Any] ?? [:]
            meta["phx_ref"] = m.ref ?? UUID().uuidString
            hub.track(id, topic: m.topic, key: member.presenceKey, meta: meta)
        case "untrack":
            hub.untrack(id, topic: m.topic)
        default:
            break
        }
        hub.send(id, .reply(m.topic, ref: m.ref))
    }

    private func expireStaleChannels() {
        let now = clock.wallNow()
        for (topic, member) in hub.topics(of: id) {
            if let exp = member.expiresAt, exp <= now { hub.expire(id, topic: topic, secondsAgo: Int(now - exp)) }
        }
    }
}
