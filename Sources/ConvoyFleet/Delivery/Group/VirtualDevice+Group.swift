import ConvoyCrypto
import ConvoyGeo
import ConvoyJSON
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation

/// Group apps (`Audience.group`, Survale): one update per tick for the whole
/// group, sent as the app sends it (a broadcast); presence tracked once
/// subscribed and its spread measured; the group's end seen and obeyed.
extension VirtualDevice {
    /// One tick's update for the group: `expected` are the members online now (each should receive
    /// it), `remote` those on other shards, `offline` how many are not online.
    /// A GPS-denied fix (Wi-Fi or cell) is flagged as such in the update; a moving one carries its heading and
    /// speed (the teammates' markers rotate with it: survale-spec.md §5).
    func shareWithGroup(_ measured: Measured, intended: Double) async {
        let (position, accuracy, reduced) = (measured.position, measured.accuracy, measured.reduced)
        // Out of its group for a while (it left, and has not been let in again): nothing to share with.
        guard !group.outOfGroup else { return }
        let clock = context.clock
        seq += 1
        let tick = seq
        let wall = clock.wall(intended)
        let members = friends.filter(\.active)
        let online = context.presence.areOnline(members.map(\.index))
        let sentNanos = Int64(wall * 1e9)
        var fix = LocationPayload(
            lat: (position.lat * 1e7).rounded() / 1e7, lon: (position.lon * 1e7).rounded() / 1e7,
            ts: (wall * 1000).rounded() / 1000, acc: (accuracy * 10).rounded() / 10, seq: tick, sentNanos: sentNanos)
        fix.reduced = reduced
        fix.heading = measured.heading.map { ($0 * 10).rounded().truncatingRemainder(dividingBy: 3600) / 10 }
        fix.speed = measured.speed.map { ($0 * 10).rounded() / 10 }
        if reduced { metrics.count(.reducedAccuracySent) }
        let payload = groupApp.plaintext(of: fix)
        if groupApp.archiveEvery != nil, group.archiveBuffer.count < Self.archiveBufferLimit { group.archiveBuffer.append(payload) }
        guard let sealed = sealTimed(payload, to: account.keys.publicKey) else { return }
        var expected: [Int32] = [], remote: [Int32] = []
        var offline = 0
        for (i, m) in members.enumerated() {
            addressee(m.index, online: online[i], expected: &expected, remote: &remote, offline: &offline)
            // How fresh its map is: the last position it shows of each teammate online now.
            if online[i], let seen = group.teamMap.lastSeen(Int32(m.index)) { metrics.record(.teammateStaleness, seconds: wall - seen) }
        }
        lastShare = (intended, position)
        let entry = recordTick(tick, expected: expected, remote: remote, offline: offline, wall: wall)
        do {
            let sent = try await groupApp.sendToGroup(OutgoingUpdate(recipient: "", body: sealed), from: account.session, realtime: realtime, via: http)
            if let ref = sent.ref {
                // A broadcast the server dropped (a refused write) is never acknowledged: forget it after a while.
                if group.awaitingAck.count > 512 { group.awaitingAck = group.awaitingAck.filter { clock.now() - $0.value.sent < 30 } }
                group.awaitingAck[ref] = (clock.now(), entry)
            }
            spendSent(bytes: sent.bytes)
        } catch {
            let reason = countFailure(error)
            ledger.sent[entry].failure = reason
        }
    }

    /// A broadcast, a presence change or a push's reply on the subscription.
    func handleGroup(_ event: RealtimeClient.Event) {
        switch event {
        case .broadcast(_, let message):
            lastHeard = message.receivedAt
            spendReceived(bytes: message.bytes)
            switch groupApp.incoming(broadcast: message) {
            case .update(let update):
                if held.catchingUp { held.updates.append(update) } else { receive(update) }
            case .groupEnded: groupEnded()
            case .directMessage(let sender, let direct): receiveDirect(direct, from: sender, at: message.receivedAt)
            case .pairing, .groupMessage, .joinRequest: break
            case .malformed: metrics.count(.malformedRows)
            case .notMine: metrics.count(.realtimeOtherChanges)
            }
        case .presence(_, let change):
            let (present, at): ([String], Double)
            switch change {
            case .state(let all, let t): (present, at) = (Array(all.keys), t)
            case .diff(let joins, _, let t): (present, at) = (Array(joins.keys), t)
            }
            for key in present {
                if let friend = friendIndex[key] { context.convergence.saw(Int(friend), by: index, at: at) }
            }
            sawTeammates(present)
        case .pushReply(_, let ref, let status, _):
            switch group.replied(ref: ref, status: status) {
            case .acknowledged(let sentAt): metrics.record(.broadcastAck, seconds: context.clock.now() - sentAt)
            case .notJoined(let entry):
                // Its channel was not joined within the push timeout: the update never left the phone.
                if ledger.sent.indices.contains(entry) { ledger.sent[entry].failure = "push_timeout" }
                metrics.count(.groupNotJoined)
            case .other, .unknown: break
            }
        default:
            break
        }
    }

    /// Subscribed (again): tracks its presence, as the app does on joining its group's channel.
    func trackPresence(on topic: String) {
        guard groupChannels.first(where: { $0.topic == topic })?.tracksPresence == true,
              let meta = groupApp.presence(for: account.userID), let realtime else { return }
        context.convergence.subscribed(index, true)
        guard realtime.track(topic, meta: JSONValue(meta.mapValues(JSONValue.string))) != nil else { return }
        context.convergence.tracked(index, members: friends.map(\.index), at: context.clock.wallNow())
    }

    /// Its group has ended: it stops sharing (the app pauses location publishing, spec §11).
    func groupEnded() {
        guard group.sawEnd() else { return }
        metrics.count(.groupEndedSeen)
        leave()
    }

    /// Connected: the archive of its positions and its owner's replays (when the app archives), direct messages, chat
    /// and media, each at its cadence. The draws come in this order, as they always have.
    func scheduleGroupTimers(from intended: Double) {
        if let every = groupApp.archiveEvery {
            context.scheduler.at(intended + every) { [weak self] t in await self?.flushArchive(intended: t) }
            scheduleReplays(from: intended)
            scheduleDirect(from: intended)
        }
        if let every = profile.messageEvery {
            context.scheduler.at(intended + rng.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.postMessage(intended: t) }
        }
        scheduleMedia(from: intended)
    }

    /// A channel subscribed (first or again): back on its channels if it was let in again, its presence tracked, the
    /// join requests it decides listed, the chat it missed loaded; a leave that came due before it was on the channel
    /// made now (once the subscription is counted: scheduled, not called).
    func groupSubscribed(_ topic: String) {
        if group.rejoining { backInGroup() }
        if life.onlineSince != nil { trackPresence(on: topic) }
        if group.role?.hearsJoinRequests == true { Task { [weak self] in await self?.decidePending() } }
        chatSubscribed(topic)
        if group.leaveDue {
            group.leaveDue = false
            context.scheduler.at(context.clock.now()) { [weak self] _ in await self?.leaveForAWhile() }
        }
    }

    /// Why what waits in its chat queue is given up as it stops: its group ended, or it left.
    var groupLeaveReason: String { group.sawGroupEnd ? "group_ended" : "left" }

    /// It closes for good: when it left its group's channels (if it was on them), and the chat it is owed since a gap.
    func groupDisconnecting(subscribed: Bool) {
        if group.disconnectedAt == nil, subscribed { group.disconnectedAt = context.clock.wallNow() }
        chatGone()
    }

    /// What the group retention check needs, online or not (a member reads its ended group's data until the
    /// purge): who it is, its token, and what it put in its group.
    func groupRetentionView() -> (userID: String, token: String, contributed: [GroupItem: Int])? {
        guard group.role != nil else { return nil }
        return (account.userID, account.session.accessToken, group.contributed)
    }

    /// At the end of the run: the owner ends its group (unless it abandons it to the backend).
    func leaveGroup() async {
        guard case .group(let g) = shape, let role = g.role, role.owner, !role.abandons, !group.sawGroupEnd else { return }
        group.sawGroupEnd = true
        await endGroup()
    }

    /// The owner's end of its group. One that failed for a reason another try can cure (no network: a case agent in a
    /// garage) is tried again 2 s later while the phone runs, as its user taps End again (`group_end_retries`); the drain
    /// waits for it (`isSettled`, within its settle time).
    private func endGroup() async {
        guard !isGone else { return }
        let started = context.clock.now()
        metrics.count(.httpRequests)
        do {
            try await groupApp.leaveGroup(account.session, owner: true, via: http)
            spendHTTP(body: 0, since: started)
        } catch {
            _ = countFailure(error)
            spendHTTP(body: 0, since: started)
            group.ending = Self.cures(error) && !isGone
            if group.ending {
                metrics.count(.groupEndRetries)
                context.scheduler.at(context.clock.now() + 2) { [weak self] _ in await self?.endGroup() }
            }
            return
        }
        group.ending = false
        // Ended: what an analyst reads back of it now is the replay check's (`VirtualDevice+Replay`).
        await finalReplay()
    }
}

/// A phone's place in its group (group apps).
public struct GroupRole: Sendable, Equatable {
    /// It owns the group (Survale: the case agent) and ends it at the end of the run.
    public var owner: Bool
    /// Its group is abandoned: its members leave early and nobody ends it (Survale: left to auto-end).
    public var abandons: Bool
    /// It was not let in at set-up: it asks to join when it comes online, and its owner lets it in.
    public var joinsByRequest = false
    /// An owner: how long it takes to decide a join request it has seen, seconds.
    public var approveAfter: ClosedRange<Double> = 1...3
    /// An owner of a group some of whose members join by request: it lists the pending ones on subscribing.
    public var hearsJoinRequests = false
    /// A member who leaves its group this long into the steady part, and asks to join again `rejoinAfter` later.
    public var leavesAt: Double?
    public var rejoinAfter = 0.0
    /// An owner: how often it loads its group's after-action replay during the run (`social.replay_every`); nil: only
    /// once, right after it ends the group (the replay check).
    public var replayEvery: Double?
    /// Its group's owner, by device index (who lets it in when it asks).
    public var ownerIndex: Int?

    public init(owner: Bool, abandons: Bool, joinsByRequest: Bool = false, approveAfter: ClosedRange<Double> = 1...3) {
        (self.owner, self.abandons, self.joinsByRequest, self.approveAfter) = (owner, abandons, joinsByRequest, approveAfter)
    }
}

/// Group messages (Survale's chat): posted at the group's `message_every`, each expected by every member in
/// the group then (on its network or not: one off it loads the line when it comes back); `message_latency`
/// from its intended send time to its arrival live, `message_catch_up_latency` to its loading after a gap.
extension VirtualDevice {
    func postMessage(intended: Double) async {
        guard let every = profile.messageEvery, life.onlineSince != nil else { return }
        context.scheduler.at(intended + rng.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.postMessage(intended: t) }
        guard !group.outOfGroup else { return }
        messageSeq += 1
        let message = GroupMessage(seq: messageSeq, sentNanos: Int64(context.clock.wall(intended) * 1e9), text: "Convoy message \(messageSeq)")
        await attempt(ChatPost(message: message, upload: nil, intended: intended), attempts: 0)
    }

    /// `caughtUp`: loaded after a gap (`VirtualDevice+ChatCatchUp`), not heard live.
    func receiveMessage(_ message: GroupMessage, from sender: String, at receivedAt: Double, caughtUp: Bool = false) {
        guard sender != account.userID else { return }
        guard friendIndex[sender] != nil else {
            metrics.count(.receivedFromStrangers)
            return
        }
        // A hostile device's probe (a line its victim posted to be stolen): counted apart.
        guard message.seq < ProbeTraffic.seqBase else {
            metrics.count(.probeRowsReceived)
            return
        }
        // A line heard twice (a rejoin's overlap) is counted once.
        guard group.messagesSeen.insert("\(sender)/\(message.seq)").inserted else { return }
        guard let from = friendIndex[sender] else { return }
        if let media = message.media {
            fetchMedia(media, of: message, from: from, caughtUp: caughtUp)
            return
        }
        let latency = receivedAt - Double(message.sentNanos) / 1e9
        metrics.count(.messagesReceived)
        if caughtUp {
            metrics.count(.messagesCaughtUp)
            metrics.record(.messageCatchUpLatency, seconds: latency)
        } else {
            metrics.record(.messageLatency, seconds: latency)
        }
        context.messages.delivered(sender: Int(from), seq: message.seq, by: index, caughtUp: caughtUp)
    }
}

/// The app's own record of the phone's positions (Survale: `locations_archive`, for replay), appended in
/// batches every `archiveEvery`; a batch that fails stays for the next round.
extension VirtualDevice {
    static let archiveBufferLimit = 2000

    func flushArchive(intended: Double) async {
        guard let every = groupApp.archiveEvery, life.isReceiving else { return }
        context.scheduler.at(intended + every) { [weak self] t in await self?.flushArchive(intended: t) }
        guard !group.archiveBuffer.isEmpty, !group.outOfGroup else { return }
        let batch = group.archiveBuffer
        group.archiveBuffer = []
        let clock = context.clock
        let started = clock.now()
        do {
            let bytes = try await groupApp.archive(batch, from: account.session, via: http)
            metrics.record(.archivePost, seconds: clock.now() - started)
            metrics.count(.archived, by: batch.count)
            group.contributed[.archive, default: 0] += batch.count
            spendHTTP(body: bytes, since: started)
        } catch {
            metrics.count(.archiveFailures)
            _ = countFailure(error)
            group.archiveBuffer = Array((batch + group.archiveBuffer).suffix(Self.archiveBufferLimit))
            spendHTTP(body: 0, since: started)
        }
        metrics.count(.httpRequests)
    }
}
