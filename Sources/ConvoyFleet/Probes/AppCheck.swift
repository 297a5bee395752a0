import ConvoyCrypto
import ConvoyJSON
import ConvoySodium
import ConvoyWire
import Foundation

/// `convoy app check`: the dry run before a load test (docs/apps.md). Two users sign up and publish their keys, link,
/// one posts an update to the other, who hears it, opens it and catches it up; each step says whether it worked and,
/// if not, the request and the answer, so that a declared app that cannot run is told before a fleet of zeros.
public enum AppCheck {
    public struct Step: Sendable, Equatable {
        public var name: String
        /// True passed, false failed, nil not tested here (the detail says why).
        public var passed: Bool?
        public var detail: String
    }

    /// The steps, in order; the first failure ends the check (every later step needs it), its detail the reason.
    public static func run(_ app: DeclaredApp, target: SupabaseTarget, engine: HTTPEngine, wait: Double = 5) async -> [Step] {
        var steps: [Step] = []
        let http = SupabaseHTTP(engine: engine, target: target)
        let run = String(UUID().uuidString.prefix(8)).lowercased()
        func pass(_ name: String, _ detail: String) { steps.append(Step(name: name, passed: true, detail: detail)) }
        func fail(_ name: String, _ detail: String) -> [Step] { steps.append(Step(name: name, passed: false, detail: detail)); return steps }

        // Accounts and keys.
        var sessions: [Session] = []
        var keys: [BoxKeyPair] = []
        for who in ["a", "b"] {
            do {
                let pair = try BoxKeyPair()
                let session = try await SupabaseAuth(http).signUp(email: "check-\(run)-\(who)@convoy.test", password: "check-\(run)-\(UUID().uuidString)")
                (sessions, keys) = (sessions + [session], keys + [pair])
            } catch {
                return fail("sign up", "\(error)")
            }
        }
        pass("sign up", "two users (GoTrue)")
        let (a, b) = (sessions[0], sessions[1])
        // The inviter posts to the invitee, unless only the invitee shares (a follow): then the other way.
        let inviterSends = app.sharing.sends(asInviter: true)
        let (from, to, toKeys) = inviterSends ? (a, b, keys[1]) : (b, a, keys[0])
        let setUp = app.spec.setup.map(describe).joined(separator: ", then ")
        let signUpStep = app.spec.sharesLocations ? "keys: publish" : "setup"
        let signUpWork = [setUp, app.spec.sharesLocations ? describe(app.spec.keys.publish) : ""].filter { !$0.isEmpty }.joined(separator: ", then ")
        do {
            for (session, pair) in zip(sessions, keys) { try await app.finishSignUp(keys: pair, session: session, via: http) }
            pass(signUpStep, "\(signUpWork) for each user")
        } catch {
            return fail(signUpStep, "\(signUpWork): \(error)")
        }
        guard app.spec.sharesLocations else {
            steps.append(Step(name: "locations", passed: nil, detail: "not tested: \(app.spec.name) shares no locations (its file declares actions alone)"))
            return await actions(app, as: a, via: http, after: steps)
        }
        let toKey: PublicKey
        do {
            let found = try await app.publicKeys(of: [to.userID], token: from.accessToken, via: http)
            guard let key = found[to.userID] else { return fail("keys: lookup", "\(app.spec.keys.table).\(app.spec.keys.column) has no key of the other user that \(app.spec.keys.encoding.rawValue) decodes") }
            guard key == toKeys.publicKey else { return fail("keys: lookup", "the key read back is not the one published") }
            toKey = key
            pass("keys: lookup", "the friend's key read back as published (\(app.spec.keys.encoding.rawValue))")
        } catch {
            return fail("keys: lookup", "\(error)")
        }

        // The recipient listens before anything is sent to it; with links made on the phones, the invitee too (it is told).
        var listeners: [String: ProbeSubscription] = [:]
        defer { listeners.values.forEach { $0.stop() } }
        for who in [to, b] where listeners[who.userID] == nil && (who.userID == to.userID || app.pairsDuringRun) {
            let subscription = app.subscription(for: who.userID)
            let listener = ProbeSubscription(url: target.realtimeURL, token: who.accessToken, topic: subscription.topic, bindings: subscription.bindings)
            listeners[who.userID] = listener
            guard await listener.joined(within: wait) == true else {
                return fail("receive: subscribe", "\(subscription.topic) \(subscription.bindings.map { "\($0.event) \($0.table) \($0.filter ?? "")" }): \(listener.reason ?? "no reply")")
            }
            pass("receive: subscribe", "\(subscription.topic), \(subscription.bindings.count) binding(s)")
        }
        let listener = listeners[to.userID]!

        // The link.
        do {
            if app.pairsDuringRun {
                let id = try await app.requestFriendship(to: Invitee(userID: b.userID, email: b.email ?? ""), preference: "precise", from: a, via: http)
                pass("link: request", "the inviter's steps; friendship \(id)")
                let told = await heard(listeners[b.userID]!, within: wait) { change in
                    if case .pairing(.requested(let heardID, let from)) = app.incoming(change) { return heardID == id && from == a.userID }
                    return false
                }
                guard told else {
                    return fail("link: told", "the invitee heard no INSERT on \(app.spec.links.table) with \(app.spec.links.columns.invitee) = it and \(app.spec.links.columns.status) = \(app.spec.links.pending)")
                }
                pass("link: told", "the invitee heard the request over Realtime")
                try await app.acceptFriendship(id, preference: "precise", token: b.accessToken, via: http)
            } else {
                try await app.befriend(FriendRequest(inviter: a, invitee: b, inviterPreference: "precise", inviteePreference: "precise", pending: false), via: http)
            }
            let active = try await app.activeFriendships(token: a.accessToken, via: http)
            guard active == 1 else { return fail("link: accept", "the inviter sees \(active) friendships with \(app.spec.links.columns.status) = \(app.spec.links.active), not 1") }
            pass("link: accept", "the inviter reads one active friendship")
        } catch {
            return fail("link", "\(error)")
        }

        // Post, hear, open, catch up.
        var sample = LocationPayload(lat: 51.5007, lon: -0.1246, ts: Date().timeIntervalSince1970, acc: 5, seq: 1, sentNanos: Int64(Date().timeIntervalSince1970 * 1e9))
        (sample.heading, sample.speed, sample.battery) = (93.5, 1.4, 0.81)
        let expected = app.plaintext(of: sample)
        let outgoing: OutgoingUpdate
        do {
            outgoing = OutgoingUpdate(recipient: to.userID, body: try app.seal(expected, to: toKey))
            let posted = try await app.send([outgoing], from: from, via: http)
            pass("post", "\(posted.bytes) bytes into \(app.spec.posting.table)\(inviterSends ? "" : ", by the invitee (sharing: invitee)")")
        } catch {
            return fail("post", "POST /rest/v1/\(app.spec.posting.table) \(String(decoding: (try? app.spec.posting.row.render { _ in .string("…") }) ?? [], as: UTF8.self)): \(error)")
        }
        var update: IncomingUpdate?
        _ = await heard(listener, within: wait) { change in
            if case .update(let u) = app.incoming(change), u.sender == from.userID { update = u; return true }
            return false
        }
        guard let update else {
            return fail("receive", "no INSERT on \(app.spec.receiving.table) for \(app.spec.receiving.filter) reached the recipient in \(Int(wait)) s")
        }
        pass("receive", "over Realtime, row \(update.id.map(String.init) ?? "without an id")")
        do {
            let opened = try app.open(update, with: toKeys)
            guard opened == expected else { return fail("open", "opened \(opened), sealed \(expected)") }
            pass("open", "the sealed box opens into the declared plaintext")
        } catch {
            return fail("open", "\(error)")
        }
        do {
            let page = try await app.catchUp(for: to.userID, since: Date().timeIntervalSince1970 - 600, after: 0, limit: 10, token: to.accessToken, via: http)
            guard page.updates.contains(where: { $0.id == update.id && $0.body == update.body }) else {
                return fail("catch up", "the row is not among the recipient's \(page.updates.count) rows since ten minutes ago")
            }
            pass("catch up", "the recipient reads its row back")
        } catch {
            return fail("catch up", "\(error)")
        }
        do {
            let stored = try await app.oldestUpdates(of: to.userID, limit: 10, token: to.accessToken, via: http)
            guard let row = stored.first(where: { $0.id == update.id }), abs(row.createdAt - Date().timeIntervalSince1970) < 300 else {
                return fail("retention: column", "\(app.spec.retention.column) of the row is missing or not a time within 5 minutes of now")
            }
            pass("retention: column", "\(app.spec.retention.column) = \(row.createdText)")
        } catch {
            return fail("retention: column", "\(error)")
        }
        // Each action once, as the inviter.
        steps = await actions(app, as: a, via: http, after: steps)
        if steps.last?.passed == false { return steps }
        if app.sharing != .mutual {
            // The control: the side that does not share posts all the same, and the backend must refuse it.
            let body: String
            do {
                body = try app.seal(expected, to: (inviterSends ? keys[0] : keys[1]).publicKey)
            } catch {
                return fail("sharing: one way", "sealing the other way: \(error)")
            }
            let answer = await refusal(app, body: body, to: from.userID, from: to, via: http)
            guard let answer else {
                return fail("sharing: one way", "the \(inviterSends ? "invitee" : "inviter"), who does not share (sharing: \(app.sharing.rawValue)), posted into \(app.spec.posting.table) and the backend stored it: its policy lets both sides share")
            }
            pass("sharing: one way", "the side that does not share is refused: \(answer)")
        }
        steps.append(await purge(app, young: update.id, update: outgoing, from: from, to: to, target: target, via: http))
        return steps
    }

    /// The backend's answer to an update posted by `session` to `recipient`, when it refused it; nil when it stored it.
    private static func refusal(_ app: DeclaredApp, body: String, to recipient: String, from session: Session, via http: SupabaseHTTP) async -> String? {
        do {
            _ = try await app.send([OutgoingUpdate(recipient: recipient, body: body)], from: session, via: http)
            return nil
        } catch {
            if let status = error.status { return "HTTP \(status)" }
            return "\(error)"
        }
    }

    /// Each of the app's actions once, as `session`'s user, after `steps`; the first failure ends the check.
    static func actions(_ app: DeclaredApp, as session: Session, via http: SupabaseHTTP, after steps: [Step]) async -> [Step] {
        var steps = steps
        for action in app.spec.actions {
            let started = ContinuousClock.now
            do {
                let outcome = try await app.perform(action, as: session, n: 1, via: http)
                let took = (ContinuousClock.now - started).components
                let ms = took.seconds * 1000 + took.attoseconds / 1_000_000_000_000_000
                steps.append(outcome.acted ? Step(name: "action: \(action.name)", passed: true, detail: "\(outcome.requests) request(s) in \(ms) ms")
                                           : Step(name: "action: \(action.name)", passed: nil,
                                                  detail: "not tested here: its select found no row to act on (a new user's view; in a run, others' rows are there)"))
            } catch {
                steps.append(Step(name: "action: \(action.name)", passed: false, detail: "\(error)"))
                return steps
            }
        }
        return steps
    }

    private static func heard(_ listener: ProbeSubscription, within seconds: Double, _ match: (RealtimeClient.Change) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if listener.changes.contains(where: match) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return listener.changes.contains(where: match)
    }

    static func describe(_ write: DeclaredAppSpec.Write) -> String {
        kind(write) + (write.asService ? " as service" : "")
    }

    private static func kind(_ write: DeclaredAppSpec.Write) -> String {
        switch write.kind {
        case .insert(let t): "insert into \(t)"
        case .upsert(let t, let c): "upsert into \(t) on \(c)"
        case .update(let t, let w): "update \(t) where \(w)"
        case .rpc(let f): "rpc \(f)"
        case .select(let t, let q): "select from \(t) where \(q)"
        }
    }
}
