import ConvoyFormats
import ConvoyJSON
import ConvoyWire
import Foundation
import Synchronization

extension ProbeRunner {
    /// Joins a channel as the actor (after the control, when there is one), tracks and broadcasts
    /// what the step asks once joined, and judges by whether it joined, what it heard, whom it saw
    /// present and whether the control heard its broadcast (docs/probes.md, `channel`).
    func runChannel(_ step: ProbeStep, _ probe: ChannelProbe, _ context: ProbeContext, _ outcome: inout ProbeOutcome) async {
        let token: String?, topic: String, payload: JSONValue?, meta: JSONValue?
        do {
            if let t = probe.token { token = try context.fill(t) } else { token = try context.token(probe.actor) }
            topic = "realtime:" + (try context.fill(probe.topic))
            payload = try probe.broadcast.map { try Self.object($0.payload, context) }
            meta = try probe.track.map { try Self.object($0, context) }
        } catch let missing as Template.Unavailable {
            outcome.notes.append("skipped \(step.source): {{\(missing.name)}} is not known for this target")
            return
        } catch {
            outcome.notes.append("skipped \(step.source): \(error)")
            return
        }
        let ref = "probe-" + String(UUID().uuidString.prefix(12)).lowercased()
        func inconclusive(_ why: String) {
            outcome.tried += 1
            outcome.notes.append("inconclusive \(step.source): \(why)")
        }
        // The control joins first, as the app does: private, its presence tracked under its user id.
        var control: ProbeChannel?
        if let c = probe.control {
            guard let t = try? context.token(c), let id = context.parties[c]?.userID else {
                outcome.notes.append("skipped \(step.source): the control (\(c.rawValue)) has no account")
                return
            }
            control = ProbeChannel(url: target.realtimeURL, token: t, topic: topic,
                                   options: .init(isPrivate: true, broadcastSelf: true, presenceKey: id))
            guard await control!.joined(within: joinTimeout) == true else {
                control?.stop()
                return inconclusive("the control (\(c.rawValue)) could not join \(context.redactor.redact(topic)): \(control?.reason ?? "no reply")")
            }
            control!.client.track(topic, meta: ["user_id": .string(id)])
        }
        defer { control?.stop() }
        let own = context.parties[probe.actor]?.userID
        let actor = ProbeChannel(url: target.realtimeURL, token: token ?? target.anonKey, topic: topic,
                                 options: .init(isPrivate: probe.isPrivate, presenceKey: own ?? ref))
        defer { actor.stop() }
        guard let joined = await actor.joined(within: joinTimeout) else {
            return inconclusive("the actor's join got no reply within \(joinTimeout.formatted()) s")
        }
        var trackRef: String?
        if joined {
            if let meta { trackRef = actor.client.track(topic, meta: meta) }
            if let payload, let b = probe.broadcast {
                // Tagged so the control tells it from a fleet's own traffic on the channel.
                actor.client.broadcast(topic, event: b.event, payload: payload.setting("probe_ref", to: .string(ref)))
            }
        }
        if let control {
            // The control's own marker: the channel delivers (and a joined actor would hear it).
            // Its marker is a positive event, awaited as long as a join (a loaded server is slow, not
            // deaf); the actor's broadcast went first, so by then it has had its chance to arrive too.
            control.client.broadcast(topic, event: "probe_marker", payload: ["probe_ref": .string(ref + "-control")])
            let markerWait = max(probe.wait, 10)
            guard await control.heard(ref + "-control", within: markerWait) else {
                return inconclusive("the control (\(probe.control!.rawValue)) did not hear its own broadcast within \(markerWait) s")
            }
        }
        if joined, probe.broadcast != nil, let control {
            _ = await control.heard(ref, within: probe.wait)
        }
        // A moment more for what the actor hears (presence, the marker).
        await actor.settle(for: 0.3)
        let delivered = control?.count(ref) ?? 0
        let presences = actor.presenceKeys.filter { $0 != own && $0 != ref }
        let heard = actor.broadcasts
        let trackStatus = trackRef.flatMap { actor.reply($0) }
        let seen: JSONValue = ["broadcasts": .array(heard.prefix(5).map { .string($0.json) }), "joined": .bool(joined),
                               "presence": JSONValue(presences.sorted()), "reason": .string(actor.reason ?? ""),
                               "track": .string(trackStatus ?? (meta == nil ? "" : "not sent"))]
        let body = Array(seen.text.utf8)
        var facts = ProbeFacts(status: joined ? 101 : 401, body: String(decoding: body, as: UTF8.self), rows: heard.count, events: heard.count)
        facts.channel = (joined, delivered, presences.count)
        judge(step, facts, context, &outcome) { kind, detail in
            ProbeEvidence(kind: kind, step: step.source, method: "WS",
                          path: "/realtime/v1/websocket \(context.redactor.redact(topic)) \(probe.isPrivate ? "private" : "public")"
                              + (probe.broadcast.map { " broadcast \($0.event)" } ?? "") + (meta == nil ? "" : " track"),
                          headers: ["access_token": "<\(probe.token == nil ? "\(probe.actor.rawValue) access token" : "catalogue token")>"],
                          requestBody: payload.map { context.redactor.excerpt(Array($0.text.utf8)) },
                          status: facts.status, responseBody: context.redactor.excerpt(body), detail: context.redactor.redact(detail))
        }
    }

    /// A catalogue's JSON object, placeholders filled, as the Realtime client sends it.
    static func object(_ json: JSONTemplate, _ context: ProbeContext) throws -> JSONValue {
        let text = try ProbeContext.render(json, context)
        guard let object = JSONScanner.parse(text), case .object = object else {
            throw Template.Unavailable(name: "an object (broadcast payloads and presence are JSON objects)")
        }
        return object
    }
}

/// One Realtime connection on one channel (broadcast and presence), recording what it hears.
final class ProbeChannel: Sendable {
    private struct Seen {
        var joined: Bool?
        var reason: String?
        var broadcasts: [RealtimeClient.Broadcast] = []
        var presence: Set<String> = []
        var replies: [String: String] = [:]
    }

    private final class Recorder: Sendable {
        let state = Mutex(Seen())
    }

    let client: RealtimeClient
    private let task: Task<Void, Never>
    private let recorder: Recorder

    init(url: String, token: String, topic: String, options: RealtimeClient.ChannelOptions) {
        let client = RealtimeClient(url: url, accessToken: token)
        client.join(topic, options: options)
        self.client = client
        let recorder = Recorder()
        self.recorder = recorder
        task = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                group.addTask {
                    for await event in client.events {
                        let state = recorder
                        switch event {
                        case .subscribed: state.state.withLock { $0.joined = true }
                        case .joinFailed(_, let reason), .channelClosed(_, let reason):
                            state.state.withLock { s in
                                if s.joined == nil { s.joined = false }
                                s.reason = reason
                            }
                        case .broadcast(_, let b): state.state.withLock { $0.broadcasts.append(b) }
                        case .presence(_, .state(let all, _)): state.state.withLock { $0.presence.formUnion(all.keys) }
                        case .presence(_, .diff(let joins, _, _)): state.state.withLock { $0.presence.formUnion(joins.keys) }
                        case .pushReply(_, let ref, let status, _): state.state.withLock { $0.replies[ref] = status }
                        default: break
                        }
                    }
                }
            }
        }
    }

    var reason: String? { recorder.state.withLock { $0.reason } }
    var broadcasts: [RealtimeClient.Broadcast] { recorder.state.withLock { $0.broadcasts } }
    var presenceKeys: Set<String> { recorder.state.withLock { $0.presence } }
    func reply(_ ref: String) -> String? { recorder.state.withLock { $0.replies[ref] } }
    /// Broadcasts heard that carry `probe_ref` = `ref`.
    func count(_ ref: String) -> Int { recorder.state.withLock { $0.broadcasts.filter { $0.payload["probe_ref"] == ref }.count } }

    /// True once joined, false if refused, nil if neither happened in time.
    func joined(within seconds: Double) async -> Bool? {
        await until(seconds) { $0.joined != nil }
        return recorder.state.withLock { $0.joined }
    }

    /// Whether a broadcast tagged `ref` arrived within `seconds`.
    func heard(_ ref: String, within seconds: Double) async -> Bool {
        await until(seconds) { s in s.broadcasts.contains { $0.payload["probe_ref"] == ref } }
        return count(ref) > 0
    }

    func settle(for seconds: Double) async { await until(seconds) { _ in false } }

    private func until(_ seconds: Double, _ done: (Seen) -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline, !Task.isCancelled, !recorder.state.withLock({ done($0) }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    func stop() { task.cancel() }
}
