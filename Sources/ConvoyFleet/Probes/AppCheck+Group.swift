import ConvoyCrypto
import ConvoyJSON
import ConvoySodium
import ConvoyWire
import Foundation

/// `convoy app check` for a declared group app: an owner, a member and a stranger sign up; the owner's group is
/// created and the member joined by the file's steps; owner and member join the group's private channel and track
/// their presence, the stranger tries to and must be refused (the control: Realtime Authorization keeps the channel
/// to its group); the owner broadcasts a fix the member hears and reads back into the declared plaintext; the owner
/// ends the group and the member hears it ended.
extension AppCheck {
    public static func run(_ app: DeclaredGroupApp, target: SupabaseTarget, engine: HTTPEngine, wait: Double = 5) async -> [Step] {
        var steps: [Step] = []
        let http = SupabaseHTTP(engine: engine, target: target)
        let run = String(UUID().uuidString.prefix(8)).lowercased()
        let g = app.group
        func pass(_ name: String, _ detail: String) { steps.append(Step(name: name, passed: true, detail: detail)) }
        func fail(_ name: String, _ detail: String) -> [Step] { steps.append(Step(name: name, passed: false, detail: detail)); return steps }

        var sessions: [Session] = []
        for who in ["owner", "member", "stranger"] {
            do {
                sessions.append(try await SupabaseAuth(http).signUp(email: "check-\(run)-\(who)@convoy.test", password: "check-\(run)-\(UUID().uuidString)"))
            } catch {
                return fail("sign up", "\(error)")
            }
        }
        pass("sign up", "an owner, a member and a stranger (GoTrue)")
        let (owner, member, stranger) = (sessions[0], sessions[1], sessions[2])
        if !app.spec.setup.isEmpty {
            do {
                for s in sessions { try await app.finishSignUp(keys: try BoxKeyPair(), session: s, via: http) }
                pass("setup", "\(app.spec.setup.map(describe).joined(separator: ", then ")) for each user")
            } catch {
                return fail("setup", "\(error)")
            }
        }
        do {
            try await app.formGroup([owner, member], joiningLater: [], number: 1, serviceKey: target.serviceKey, via: http)
            guard let id = app.groupID(of: owner.userID) else { return fail("groups: create", "no group id saved") }
            pass("groups: create, join", "group \(id): \(g.create.map(describe).joined(separator: ", then ")); the member: "
                 + g.join.map { describe($0.write) + " by the \($0.byOwner ? "owner" : "member")" }.joined(separator: ", then "))
        } catch {
            return fail("groups: create, join", "\(error)")
        }

        // Owner and member on the channel, each tracking its presence; the stranger asks to join the owner's channel.
        let channel = app.subscription(for: owner.userID)
        var listeners: [ProbeSubscription] = []
        defer { listeners.forEach { $0.stop() } }
        for s in [owner, member] {
            let sub = app.subscription(for: s.userID)
            let listener = ProbeSubscription(url: target.realtimeURL, token: s.accessToken, topic: sub.topic, bindings: sub.bindings, options: sub.options)
            listeners.append(listener)
            guard await listener.joined(within: wait) == true else {
                return fail("channel: join", "\(sub.topic) (private) as the \(s.userID == owner.userID ? "owner" : "member"): \(listener.reason ?? "no reply") "
                            + "(its policies on realtime.messages must let the group's members read broadcast and presence)")
            }
            if let meta = app.presence(for: s.userID) { _ = listener.client.track(sub.topic, meta: JSONValue(meta.mapValues(JSONValue.string))) }
        }
        pass("channel: join", "\(channel.topic), private, owner and member")
        let outsider = ProbeSubscription(url: target.realtimeURL, token: stranger.accessToken, topic: channel.topic, bindings: [],
                                         options: RealtimeClient.ChannelOptions(isPrivate: true))
        listeners.append(outsider)
        switch await outsider.joined(within: wait) {
        case false?: pass("channel: stranger refused", "a user in no group asked to join \(channel.topic): \(outsider.reason ?? "refused")")
        case true?: return fail("channel: stranger refused", "a user in no group joined \(channel.topic): its policies on realtime.messages let anyone in")
        case nil: return fail("channel: stranger refused", "no answer to a stranger's join in \(Int(wait)) s")
        }

        if g.presence != nil {
            let (o, m) = (listeners[0], listeners[1])
            guard await seen(within: wait, { o.present.contains(member.userID) && m.present.contains(owner.userID) }) else {
                return fail("presence", "owner sees \(o.present.sorted()), member sees \(m.present.sorted()): each should see the other")
            }
            pass("presence", "owner and member each see the other's presence")
        }

        var sample = LocationPayload(lat: 51.5007, lon: -0.1246, ts: Date().timeIntervalSince1970, acc: 5, seq: 1, sentNanos: Int64(Date().timeIntervalSince1970 * 1e9))
        (sample.heading, sample.speed, sample.battery) = (93.5, 1.4, 0.81)
        let expected = app.plaintext(of: sample)
        do {
            let body = try app.seal(expected, to: try BoxKeyPair().publicKey)
            let sent = try await app.sendToGroup(OutgoingUpdate(recipient: "", body: body), from: owner, realtime: listeners[0].client, via: http)
            pass("broadcast", "\(sent.bytes) bytes, event \(g.event), on \(channel.topic)")
        } catch {
            return fail("broadcast", "\(error)")
        }
        var heard: IncomingUpdate?
        _ = await seen(within: wait) {
            heard = listeners[1].broadcasts.lazy.compactMap { b -> IncomingUpdate? in
                if case .update(let u) = app.incoming(broadcast: b), u.sender == owner.userID { return u }
                return nil
            }.first
            return heard != nil
        }
        guard let heard else { return fail("receive", "the member heard no \(g.event) broadcast with \(g.sender) = the owner in \(Int(wait)) s") }
        pass("receive", "the member heard it, \(g.sender) = the owner")
        do {
            let opened = try app.open(heard, with: try BoxKeyPair())
            guard opened == expected else { return fail("read", "read \(opened), sent \(expected)") }
            pass("read", "the broadcast reads back into the declared plaintext")
        } catch {
            return fail("read", "\(error)")
        }

        do {
            try await app.leaveGroup(owner, owner: true, via: http)
        } catch {
            return fail("groups: end", "\(error)")
        }
        let ended = await seen(within: wait) { listeners[1].changes.contains { if case .groupEnded = app.incoming($0) { true } else { false } } }
        pass("groups: end", "\(g.end.map(describe).joined(separator: ", then "))"
             + (ended ? "; the member heard it ended" : "; the member did not hear it (no UPDATE on \(g.table) over Realtime: add it to the publication)"))
        if let key = target.serviceKey {
            do {
                let ends = try await app.groupEnds(serviceKey: key, via: http)
                guard ends[owner.userID]?.ended == true else {
                    return fail("groups: ended", "\(g.table).\(g.columns.ended) of the group is not set, read with the service key")
                }
                pass("groups: ended", "\(g.table).\(g.columns.ended) set")
            } catch {
                return fail("groups: ended", "\(error)")
            }
        } else {
            steps.append(Step(name: "groups: ended", passed: nil, detail: "not tested: reading how groups ended needs the project's service key"))
        }
        return await actions(app.rows, as: owner, via: http, after: steps)
    }

    private static func seen(within seconds: Double, _ done: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if done() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return done()
    }
}
