import ConvoyFormats
import ConvoyJSON
import ConvoyTime
import Foundation
import HTTPTypes

/// One websocket's conversation in Supabase Realtime's protocol: join and
/// leave channels, heartbeats, token refresh, broadcast and presence, on
/// public channels and on private ones (Realtime Authorization: the store's
/// policies on `realtime.messages`, asked at a join, at a token refresh and
/// at the first send or track after either).
struct RealtimeSession: Sendable {
    let id: RealtimeHub.ConnectionID
    let hub: RealtimeHub
    let tokens: TokenService
    let authorizer: any ChannelAuthorizer
    let clock: any ConvoyClock
    /// The connection's `apikey`, used when a join carries no access token.
    let apikey: String

    func handle(_ text: String) async {
        typealias Event = PhoenixFrame.Event
        // A heartbeat (every client's every 25 s) is answered without building the whole frame.
        if text.utf8.count < 256, text.contains(#""heartbeat""#), let head = PhoenixFrame.head(text),
           head.topic == PhoenixFrame.heartbeatTopic, head.event == Event.heartbeat {
            hub.send(id, .reply(PhoenixFrame.heartbeatTopic, ref: head.ref))
            expireStaleChannels()
            return
        }
        guard let m = PhoenixFrame(text: text) else { return }
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
        case (_, Event.broadcast): await broadcast(m)
        case (_, Event.presence): await presence(m)
        default:
            hub.send(id, .reply(m.topic, ref: m.ref, status: "error", response: ["reason": .string("unknown event \(m.event)")]))
        }
    }

    private func join(_ m: PhoenixFrame) async {
        func refuse(_ reason: String) { hub.send(id, .reply(m.topic, ref: m.ref, status: "error", response: ["reason": .string(reason)])) }
        guard m.topic.hasPrefix("realtime:") else { return refuse("TopicNameRequired: topics start with realtime:") }
        let config = m.payload["config"] ?? .object([])
        let isPrivate = Self.flag(config["private"])
        let token = m.payload["access_token"]?.string ?? apikey
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
        for object in config["postgres_changes"]?.items ?? [] {
            do {
                bindings.append(try ChangeBinding(object, schema: hub.schema))
            } catch {
                return refuse("Unable to subscribe to changes with given parameters: \(error.reason)")
            }
        }
        let broadcast = config["broadcast"] ?? .object([])
        let presenceKey = config["presence"]?["key"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        let name = String(m.topic.dropFirst("realtime:".count))
        guard hub.canJoin(id, topic: m.topic) else {
            return refuse("ChannelRateLimitReached: Too many channels (\(RealtimeHub.maxChannels) per connection)")
        }
        var policies: ChannelPolicies?
        if isPrivate {
            switch await readPolicies(name, principal) {
            case .success(let p) where p.mayJoin: policies = p
            case .success: return refuse("Unauthorized: You do not have permissions to read from this Channel topic: \(name)")
            case .failure(let reason): return refuse(reason)
            }
        }
        let member = RealtimeHub.Member(
            principal: principal, expiresAt: claims.exp.map(Double.init), bindings: bindings,
            broadcastSelf: Self.flag(broadcast["self"]), broadcastAck: Self.flag(broadcast["ack"]),
            presenceKey: presenceKey ?? UUID().uuidString.lowercased(), channelName: name, policies: policies)
        // Reply first, then index: a change can never reach the client before the
        // reply that tells it the binding ids (realtime-js would drop it).
        hub.send(id, .reply(m.topic, ref: m.ref, response: ["postgres_changes": .array(bindings.map(\.echo))]))
        _ = hub.join(id, topic: m.topic, member: member)
        if !bindings.isEmpty {
            hub.send(id, .system(m.topic, status: "ok", message: PhoenixFrame.subscribedMessage, channel: name))
        }
        if member.readsPresence {
            hub.send(id, PhoenixFrame(topic: m.topic, event: PhoenixFrame.Event.presenceState, payload: hub.presenceState(id, topic: m.topic)))
        }
    }

    /// A join's boolean as Supabase casts it (`FlexibleBoolean` for `private`, Ecto's boolean for
    /// `self` and `ack`): true or false, or the text "true" or "false"; anything else is false,
    /// as Supabase drops a field it cannot cast.
    static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .string(let text)?: text.lowercased() == "true"
        case .bool(let bool)?: bool
        default: false
        }
    }

    /// What Phoenix answers a frame on a topic the connection has not joined.
    private func unmatched(_ m: PhoenixFrame) {
        hub.send(id, .reply(m.topic, ref: m.ref, status: "error", response: ["reason": "unmatched topic"]))
    }

    private enum Permissions {
        case success(ChannelPolicies)
        case failure(String)
    }

    /// A private channel's read permissions, or the reason to refuse it (a policy
    /// that fails counts as no permission; a database that cannot answer is said so).
    private func readPolicies(_ name: String, _ principal: Principal) async -> Permissions {
        do {
            return .success(try await authorizer.readPolicies(topic: name, as: principal))
        } catch {
            return .failure(Self.unavailable(error)
                ? "UnableToSetPolicies: Realtime was unable to connect to the project database"
                : "Unauthorized: You do not have permissions to read from this Channel topic: \(name)")
        }
    }

    private static func unavailable(_ error: any Error) -> Bool {
        guard let api = error as? APIError else { return true }
        return api.status.code >= 500
    }

    /// `member`'s write permissions on `topic`, computed now if they were not yet since the join or the last
    /// token; nil when the database could not say (nothing is allowed then, and nothing is remembered).
    private func writePolicies(_ member: RealtimeHub.Member, topic: String) async -> ChannelPolicies? {
        guard let policies = member.policies else { return .everything }
        guard policies.broadcastWrite == nil || policies.presenceWrite == nil else { return policies }
        guard let computed = try? await authorizer.withWritePolicies(policies, topic: member.channelName, as: member.principal) else {
            return nil
        }
        hub.update(id, topic: topic) { $0.policies = computed }
        return computed
    }

    /// `access_token`: a fresh token for a joined channel; a bad one closes it. One that is not
    /// text is ignored, as Supabase ignores it.
    private func refresh(_ m: PhoenixFrame) async {
        guard hub.member(id, topic: m.topic) != nil else { return unmatched(m) }
        guard let token = m.payload["access_token"]?.string else { return }
        let name = hub.member(id, topic: m.topic)?.channelName ?? m.topic
        func shut(_ message: String) {
            hub.send(id, .system(m.topic, status: "error", message: message, channel: name, extension: "system"))
            hub.send(id, PhoenixFrame(topic: m.topic, event: PhoenixFrame.Event.close))
            hub.leave(id, topic: m.topic)
        }
        let claims: Claims, principal: Principal
        do {
            claims = try await tokens.verify(token)
            guard let p = Principal(claims: claims) else { throw TokenService.Failure.invalid("role") }
            principal = p
        } catch {
            return shut("Invalid JWT Token")
        }
        // A private channel's permissions are computed again for the new token, as Supabase does; a read
        // permission it had and has no longer closes the channel.
        var policies: ChannelPolicies?
        if let before = hub.member(id, topic: m.topic)?.policies {
            switch await readPolicies(name, principal) {
            case .failure(let reason): return shut(reason)
            case .success(let now) where !now.mayJoin:
                return shut("You do not have permissions to read from this Channel topic: \(name)")
            case .success(let now) where (before.broadcastRead && !now.broadcastRead) || (before.presenceRead && !now.presenceRead):
                return shut("You no longer have permission to read from this Channel topic: \(name)")
            case .success(let now): policies = now
            }
        }
        hub.update(id, topic: m.topic) {
            $0.principal = principal
            $0.expiresAt = claims.exp.map(Double.init)
            if let policies { $0.policies = policies }
        }
    }

    /// A broadcast a private channel's policies do not let it send is dropped
    /// without a reply, ack or not, as Supabase drops it. One with no event name
    /// (no payload, a payload that is not an object) is answered with an error and
    /// goes to nobody, where Supabase would pass it on: no client could route it.
    private func broadcast(_ m: PhoenixFrame) async {
        guard let member = hub.member(id, topic: m.topic) else { return unmatched(m) }
        guard m.payload["event"]?.string != nil else {
            return hub.send(id, .reply(m.topic, ref: m.ref, status: "error", response: ["reason": "a broadcast needs an event name"]))
        }
        guard await writePolicies(member, topic: m.topic)?.broadcastWrite == true else { return }
        hub.broadcast(from: id, topic: m.topic, payload: m.payload, includeSelf: member.broadcastSelf)
        if member.broadcastAck { hub.send(id, .reply(m.topic, ref: m.ref)) }
    }

    /// A track a private channel's policies do not allow gets an error reply, as on Supabase;
    /// so do a track whose `payload` is not an object and an event that is neither track nor untrack.
    private func presence(_ m: PhoenixFrame) async {
        guard let member = hub.member(id, topic: m.topic) else { return unmatched(m) }
        func refuse(_ response: JSONValue = .object([])) { hub.send(id, .reply(m.topic, ref: m.ref, status: "error", response: response)) }
        switch m.payload["event"]?.string?.lowercased() {
        case "track":
            guard await writePolicies(member, topic: m.topic)?.presenceWrite == true else { return refuse() }
            let given = m.payload["payload"] ?? .object([])
            guard case .object = given else { return refuse(["reason": "Presence track payload must be a map"]) }
            hub.track(id, topic: m.topic, key: member.presenceKey, meta: given.setting("phx_ref", to: .string(m.ref ?? UUID().uuidString)))
        case "untrack":
            hub.untrack(id, topic: m.topic)
        case nil where m.payload["event"] == nil:
            break
        default:
            return refuse()
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
