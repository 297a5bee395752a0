import ConvoyCrypto
import ConvoySodium
import ConvoyWire
import Foundation

extension ProbeRunner {
    /// The friend sends the victim two updates (seq 1 and 2); the victim's
    /// device shows both. The actor re-posts the first ciphertext, captured
    /// off the network, as `sender`: the server's answer is judged by the
    /// step's rules (storing it is a finding: nothing server-side can tell a
    /// replayed ciphertext). Then the victim's `ReplayCheck` judges the replayed
    /// row as it arrives (from `sender`) and as it would arrive had the
    /// server let it through under the friend's id: accepting either is a leak.
    func runReplay(_ step: ProbeStep, _ probe: ReplayProbe, _ context: ProbeContext, _ outcome: inout ProbeOutcome) async {
        guard case .pairwise(let app) = app.shaped else {
            outcome.notes.append("skipped \(step.source): \(app.name) posts no sealed rows to re-post (a replay is for apps that insert one per friend)")
            return
        }
        guard let victimKey = context.victimKey, let friend = context.parties[.friend], let victim = context.parties[.victim] else {
            outcome.notes.append("skipped \(step.source): the victim's public key is not readable, so no ciphertext can be made for it")
            return
        }
        let now = Date().timeIntervalSince1970.rounded(.down)
        let first = LocationPayload(lat: ProbeTraffic.replayed[0].lat, lon: ProbeTraffic.replayed[0].lon, ts: now - 2, acc: 5, seq: ProbeTraffic.seqBase + 1)
        let second = LocationPayload(lat: ProbeTraffic.replayed[1].lat, lon: ProbeTraffic.replayed[1].lon, ts: now - 1, acc: 5, seq: ProbeTraffic.seqBase + 2)
        let sender: String
        let c1: String, c2: String
        do {
            sender = try context.fill(probe.sender)
            c1 = try app.seal(app.plaintext(of: first), to: victimKey)
            c2 = try app.seal(app.plaintext(of: second), to: victimKey)
        } catch {
            outcome.notes.append("skipped \(step.source): \(error)")
            return
        }
        let http = SupabaseHTTP(engine: engine, target: target)
        for c in [c1, c2] {
            do {
                _ = try await app.send([OutgoingUpdate(recipient: victim.userID, body: c)], from: friend.session, via: http)
            } catch {
                outcome.tried += 1
                outcome.notes.append("inconclusive \(step.source): the friend could not send the victim an update (\(context.redactor.redact("\(error)")))")
                return
            }
        }
        var device = ReplayCheck(friends: [friend.userID], maxAge: replayMaxAge)
        if let keys = victim.keys {
            let shown = [c1, c2].map { c in
                (try? app.open(IncomingUpdate(sender: friend.userID, body: c), with: keys)).map { device.check(sender: friend.userID, $0, now: now) }
            }
            guard shown.allSatisfy({ $0 == .accept }) else {
                outcome.tried += 1
                outcome.notes.append("inconclusive \(step.source): the victim's device did not show the friend's fresh updates (\(shown))")
                return
            }
        }
        // The re-post, judged by the catalogue's rules.
        let shape = app.updateRequest(sender: sender, recipient: "{{victim.id}}", body: c1)
        let repost = ProbeRequest(actor: probe.actor, method: shape.method, path: shape.path, query: [], headers: shape.headers,
                                  body: .json(.object(shape.fields.map { JSONTemplate.Member($0.name, .string($0.value)) })), source: step.source)
        var stored = false
        switch await send(repost, context) {
        case .skipped(let why): outcome.notes.append("skipped \(step.source): \(why)")
        case .failed(let why):
            outcome.tried += 1
            outcome.notes.append("inconclusive \(step.source): \(why)")
        case .sent(let response, let sent):
            stored = response.status < 300
            judge(step, ProbeFacts(response), context, &outcome) {
                context.evidence(step, sent, status: response.status, body: response.body, kind: $0, detail: $1)
            }
        }
        // The receiving device's check.
        guard let keys = victim.keys, let replayed = try? app.open(IncomingUpdate(sender: sender, body: c1), with: keys) else {
            outcome.notes.append("skipped \(step.source): the victim's key pair is not known, so its device check was not run")
            return
        }
        outcome.tried += 1
        let later = now + 1
        var asFriend = device
        var verdicts: [(String, ReplayCheck.Verdict)] = []
        if stored {
            verdicts.append(("as stored, from \(sender == friend.userID ? "the friend" : "the re-poster")", device.check(sender: sender, replayed, now: later)))
        }
        verdicts.append(("under the friend's id", asFriend.check(sender: friend.userID, replayed, now: later)))
        let text = verdicts.map { "\($0.0): \($0.1)" }.joined(separator: "; ")
        if verdicts.contains(where: { $0.1 == .accept }) {
            outcome.leaked += 1
            outcome.evidence.append(ProbeEvidence(kind: .leak, step: step.source, method: "DEVICE", path: "ReplayCheck (seq 1 after seq 2)", headers: [:],
                                                  requestBody: nil, status: 0, responseBody: "", detail: "the victim's device would show the replayed update: \(text)"))
        } else {
            outcome.denied += 1
            outcome.notes.append("replay \(step.source): the victim's device check: \(text)")
        }
    }
}
