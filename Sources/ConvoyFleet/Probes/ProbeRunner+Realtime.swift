import ConvoyJSON
import ConvoyWire
import Foundation
import Synchronization

extension ProbeRunner {
    /// Subscribes as the actor (and the control), runs `then`, waits, and
    /// judges by how many changes the actor received that are not about itself.
    func runRealtime(_ step: ProbeStep, _ probe: RealtimeProbe, _ context: ProbeContext, _ outcome: inout ProbeOutcome) async {
        let token: String?, filter: String?
        do throws(Template.Unavailable) {
            if let t = probe.token { token = try context.fill(t) } else { token = try context.token(probe.actor) }
            if let f = probe.filter { filter = try context.fill(f) } else { filter = nil }
        } catch {
            outcome.notes.append("skipped \(step.source): {{\(error.name)}} is not known for this target")
            return
        }
        let binding = RealtimeClient.Binding(event: probe.event, table: probe.table, filter: filter)
        let topic = "realtime:probe-\(outcome.id)"
        let attacker = ProbeSubscription(url: target.realtimeURL, token: token ?? target.anonKey, topic: topic, binding: binding)
        defer { attacker.stop() }
        var control: ProbeSubscription?
        if let c = probe.control, let t = try? context.token(c) {
            control = ProbeSubscription(url: target.realtimeURL, token: t, topic: topic + "-control", binding: binding)
        }
        defer { control?.stop() }
        let joined = await attacker.joined(within: joinTimeout)
        guard joined != nil else {
            // Neither subscribed nor refused: nothing was tested, so it is not "denied".
            outcome.tried += 1
            outcome.notes.append("inconclusive \(step.source): the actor's join got no reply within \(joinTimeout.formatted()) s")
            return
        }
        if let control, await control.joined(within: joinTimeout) != true {
            outcome.tried += 1
            outcome.notes.append("inconclusive \(step.source): the control (\(probe.control!.rawValue)) could not subscribe")
            return
        }
        for request in probe.then {
            if case .sent(let r, _) = await send(request, context), r.status >= 300 {
                outcome.notes.append("\(step.source): a `then` request got HTTP \(r.status) \(context.redactor.excerpt(r.body, limit: 200))")
            }
        }
        // Wait for the control to see the change (or the time allowed), then a moment more for the attacker.
        let deadline = ContinuousClock.now + .seconds(probe.wait)
        while ContinuousClock.now < deadline, !Task.isCancelled, control.map({ $0.changes.isEmpty }) ?? true {
            try? await Task.sleep(for: .milliseconds(50))
        }
        try? await Task.sleep(for: .milliseconds(300))
        // What concerns the actor itself (any column holding its own user id, e.g. rows its friends
        // send it in a running fleet) is its own to see: only the rest can be a leak.
        let own = context.parties[probe.actor]?.userID
        let received = attacker.changes.filter { change in own.map { id in !change.record.values.contains(id) } ?? true }
        if let control, control.changes.isEmpty {
            outcome.tried += 1
            outcome.notes.append("inconclusive \(step.source): the control (\(probe.control!.rawValue)) received nothing within \(probe.wait) s, so nothing could have leaked")
            return
        }
        let firstRecord = received.first.map { r in
            Array(JSONValue(r.record.mapValues(JSONValue.string)).text.utf8)
        } ?? Array((joined == true ? "" : "join refused: \(attacker.reason ?? "no reply")").utf8)
        let facts = ProbeFacts(status: joined == true ? 101 : 401, body: String(decoding: firstRecord, as: UTF8.self), rows: received.count,
                               events: received.count)
        judge(step, facts, context, &outcome) { kind, detail in
            ProbeEvidence(kind: kind, step: step.source, method: "WS", path: "/realtime/v1/websocket \(topic) postgres_changes \(probe.event) \(probe.table)\(filter.map { " filter \(context.redactor.redact($0))" } ?? "")",
                          headers: ["access_token": "<\(probe.token == nil ? "\(probe.actor.rawValue) access token" : "catalogue token")>"],
                          requestBody: nil, status: facts.status, responseBody: context.redactor.excerpt(firstRecord),
                          detail: context.redactor.redact(detail))
        }
    }
}

/// One Realtime connection with one channel, recording what it receives.
final class ProbeSubscription: Sendable {
    private struct Seen {
        var joined: Bool?
        var reason: String?
        var changes: [RealtimeClient.Change] = []
        var broadcasts: [RealtimeClient.Broadcast] = []
        var present: Set<String> = []
    }

    private final class Recorder: Sendable {
        let state = Mutex(Seen())
    }

    private let task: Task<Void, Never>
    private let recorder: Recorder
    /// Its connection, for what a check sends on the channel (a broadcast, a presence track).
    let client: RealtimeClient

    convenience init(url: String, token: String, topic: String, binding: RealtimeClient.Binding) {
        self.init(url: url, token: token, topic: topic, bindings: [binding])
    }

    init(url: String, token: String, topic: String, bindings: [RealtimeClient.Binding], options: RealtimeClient.ChannelOptions = .init()) {
        let client = RealtimeClient(url: url, accessToken: token)
        client.join(topic, bindings: bindings, options: options)
        let recorder = Recorder()
        self.recorder = recorder
        self.client = client
        task = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                group.addTask {
                    for await event in client.events {
                        switch event {
                        case .subscribed: recorder.state.withLock { $0.joined = true }
                        case .joinFailed(_, let reason), .channelClosed(_, let reason):
                            recorder.state.withLock { s in
                                if s.joined == nil { s.joined = false }
                                s.reason = reason
                            }
                        case .change(_, let change): recorder.state.withLock { $0.changes.append(change) }
                        case .broadcast(_, let message): recorder.state.withLock { $0.broadcasts.append(message) }
                        case .presence(_, .state(let all, _)): recorder.state.withLock { $0.present.formUnion(all.keys) }
                        case .presence(_, .diff(let joins, _, _)): recorder.state.withLock { $0.present.formUnion(joins.keys) }
                        default: break
                        }
                    }
                }
            }
        }
    }

    var changes: [RealtimeClient.Change] { recorder.state.withLock { $0.changes } }
    var reason: String? { recorder.state.withLock { $0.reason } }
    var broadcasts: [RealtimeClient.Broadcast] { recorder.state.withLock { $0.broadcasts } }
    /// The presence keys seen joining the channel.
    var present: Set<String> { recorder.state.withLock { $0.present } }

    /// True once subscribed, false if refused, nil if neither happened in time.
    func joined(within seconds: Double) async -> Bool? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline, !Task.isCancelled {
            if let j = recorder.state.withLock({ $0.joined }) { return j }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return recorder.state.withLock { $0.joined }
    }

    func stop() { task.cancel() }
}
