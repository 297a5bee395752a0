import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation

/// What a phone of a mailbox app keeps (QuickPic): messages it has shown but not yet had acknowledged, those
/// whose acknowledgement succeeded, and whether a poll is under way.
struct MailboxState: Sendable {
    /// Shown, acknowledgement not through yet (tried again at the next poll that brings them).
    var shown: Set<String> = []
    var acked: Set<String> = []
    var polling = false
    /// Polls that found a full page ask again at once, up to this many in a row.
    var drained = 0
    /// A listener app's held connection (`MailboxApp.openListener`), and when the phone may try to open it again
    /// after it closed or failed (the Firestore SDKs' backoff: 1 s, × 1.5 a failure, at most 60 s).
    var listener: (any MailboxListener)?
    var listenFailures = 0
    var listenRetryAt = 0.0
    /// Opening under way (a poll does not open a second), and whether the app has no held connection (it polls).
    var listenOpening = false
    var pollsOnly = false
    /// A push asked for a look while one was under way: another follows it at once.
    var lookAgain = false
    /// When the held connection last carried anything (the run's clock): a keepalive goes after `keepalive` quiet seconds.
    var listenTraffic = 0.0

    /// The SDKs' gRPC keepalive: a ping after 30 s without traffic (`FirestoreListener.ping`).
    static let keepalive = 30.0

    // MARK: Its decisions (the phone does what they return)

    /// What a fetched message is to this phone, by what it has done with it before.
    enum Fetched: Equatable {
        /// New: to open, show once and acknowledge.
        case new
        /// Shown already, its acknowledgement did not go through: acknowledged once more.
        case shownNotAcknowledged
        /// Acknowledged (the backend said so) and served again: the backend did not delete it.
        case servedAfterAck
    }

    func fetched(_ id: String) -> Fetched {
        if acked.contains(id) { return .servedAfterAck }
        return shown.contains(id) ? .shownNotAcknowledged : .new
    }

    /// Shown to its user (before the acknowledgement).
    mutating func show(_ id: String) { shown.insert(id) }

    /// Its acknowledgement went through (`gone`: the backend had deleted it already, a 404): not shown again either way;
    /// only an acknowledged one counts if it is served again.
    mutating func acknowledged(_ id: String, gone: Bool = false) {
        shown.remove(id)
        if !gone { acked.insert(id) }
    }

    /// A poll starts: false when one is in flight (this one is skipped, as the app's poll would not overlap).
    mutating func startPoll() -> Bool {
        guard !polling else { return false }
        polling = true
        return true
    }

    mutating func endPoll() { polling = false }

    /// The Firestore SDKs' backoff before the `failures`-th reopening (1 s × 1.5 per failure, at most 60 s).
    static func listenBackoff(failures: Int) -> Double { min(60, pow(1.5, Double(max(0, failures - 1)))) }

    /// Polls that return a full page ask again at once, up to ten pages a poll: whether to fetch once more after `rounds`
    /// fetches, the last of which returned `count` messages (nil: it failed).
    static func fetchAgain(after rounds: Int, returned count: Int?, page: Int) -> Bool { count == page && rounds < 10 }
}

/// Mailbox apps (`MailboxApp`: QuickPic, Closer): the phone sends each friend texts and photos
/// (`message_every`, `photo_every`), sealed and signed, as single requests; polls its mailbox on its interval
/// (`poll_every`); verifies, opens and shows each message, then acknowledges it (the backend deletes it). It
/// refreshes its token before expiry and, now and then (`relogin_every`), logs out and in again. No Realtime.
extension VirtualDevice {
    /// The largest page a poll asks for.
    static let mailboxPage = 50

    /// Online: polls, and sends on its timers, each from a random phase.
    func openMailbox(at intended: Double) {
        life.joinedRealtime()
        scheduleRefresh()
        // A listener app's phone holds its connection from now on (QuickPic's polls need none).
        context.scheduler.at(intended) { [weak self] _ in await self?.openListener() }
        // An app whose phones pair during the run (Closer) asks its partner as a Realtime app's phone does.
        schedulePairing(arrival: intended)
        if let every = profile.pollEvery {
            context.scheduler.at(intended + rng.uniform(0, every.upperBound)) { [weak self] t in await self?.poll(intended: t) }
        } else {
            // It never opens the app to read: what is sent to it waits for the fallback purge.
            context.mailbox.parked(index)
            markListening(arrivedAt: intended)
        }
        if let every = profile.messageEvery {
            context.scheduler.at(intended + rng.uniform(0, every.upperBound)) { [weak self] t in await self?.sendDirect(.text, intended: t) }
        }
        for plan in profile.media where plan.kind == .photo {
            context.scheduler.at(intended + rng.uniform(0, plan.every.upperBound)) { [weak self] t in await self?.sendPhoto(plan, intended: t) }
        }
        if let every = profile.reloginEvery {
            context.scheduler.at(intended + rng.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.relogin(intended: t) }
        }
    }

    private func markListening(arrivedAt: Double) {
        guard case .first = life.subscription() else { return }
        metrics.record(.subscribe, seconds: context.clock.now() - arrivedAt)
        context.presence.set(index, online: true)
        ledger.online.append(.init(from: context.clock.wallNow()))
    }

    // MARK: Sending

    func sendPhoto(_ plan: MediaPlan, intended: Double) async {
        guard life.onlineSince != nil else { return }
        context.scheduler.at(intended + rng.uniform(plan.every.lowerBound, plan.every.upperBound)) { [weak self] t in
            await self?.sendPhoto(plan, intended: t)
        }
        await send(.photo, size: Int.random(in: plan.size, using: &rng), intended: intended)
    }

    func sendDirect(_ kind: DirectMessage.Kind, intended: Double) async {
        guard life.onlineSince != nil, let every = profile.messageEvery else { return }
        context.scheduler.at(intended + rng.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.sendDirect(kind, intended: t) }
        await send(.text, size: 40 + Int(rng.next() % 160), intended: intended)
    }

    /// One message to a friend drawn at random: encoded and sealed (timed, as CPU the battery pays), then posted.
    private func send(_ kind: DirectMessage.Kind, size: Int, intended: Double) async {
        let active = friends.filter(\.active)
        guard !active.isEmpty else { return }
        let friend = active[Int(rng.next() % UInt64(active.count))]
        messageSeq += 1
        let message = DirectMessage(kind: kind, seq: messageSeq, sentNanos: Int64(context.clock.wall(intended) * 1e9), size: size)
        let clock = context.clock
        var started = clock.now()
        let composed: SealedMessage?
        do { composed = try mailboxApp.composeDirect(message, to: friend, from: account.session, keys: account.keys) } catch {
            metrics.count(.sealFailures)
            return
        }
        guard let sealed = composed else {
            // Nothing to send now (Closer: no question yet, or today's answered): the number is not used.
            messageSeq -= 1
            return
        }
        let sealing = clock.now() - started
        metrics.record(.seal, seconds: sealing)
        spendCPU(seconds: sealing)
        started = clock.now()
        do {
            let receipt = try await postDirect(sealed)
            metrics.record(.mailboxPost, seconds: clock.now() - started)
            metrics.count(.mailboxSent)
            context.tally.sent(by: index)
            if kind == .photo { metrics.count(.mailboxPhotosSent) }
            metrics.count(.mailboxBytesUp, by: receipt.bytesUp)
            spendExchange(up: receipt.bytesUp, down: receipt.bytesDown, since: started)
            context.mailbox.posted(sender: index, seq: message.seq, to: friend.index, id: receipt.id ?? "",
                                   storedAt: receipt.createdAt ?? clock.wallNow(), held: mailboxApp.holdsUntilAnswered)
            // A listener fires on the phone's own write at once (Firestore's latency compensation): what its
            // partner wrote before is in what was pushed, so the phone looks now.
            if mailbox.listener != nil { await look() }
        } catch {
            spendExchange(up: sealed.ciphertext.count * 4 / 3, down: 0, since: started)
            metrics.count(.mailboxSendFailed)
            metrics.count(.mailboxSendFailed(reason: countFailure(error)))
        }
        metrics.count(.httpRequests)
    }

    /// Posts with the phone's session; a 401 because the phone logged out and in meanwhile (`relogin_every`: the
    /// session it began with ended under it) is sent once more with the new session, as the app would.
    private func postDirect(_ sealed: SealedMessage) async throws(SupabaseError) -> MailboxReceipt {
        let token = account.session.accessToken
        do {
            return try await mailboxApp.postDirect(sealed, from: account.session, via: http)
        } catch where error.status == 401 && account.session.accessToken != token {
            return try await mailboxApp.postDirect(sealed, from: account.session, via: http)
        }
    }

    // MARK: Polling

    /// One poll at its intended time (the next is scheduled first, on the interval: an open workload), then the
    /// messages it brought: each verified, opened and shown, then acknowledged. A full page asks again at once.
    func poll(intended: Double) async {
        guard !life.isGone, let every = profile.pollEvery else { return }
        if context.options.workload == .open || mailbox.drained > 0 {
            context.scheduler.at(intended + rng.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.poll(intended: t) }
        }
        // A held connection that closed, or whose opening failed, is opened again (after its backoff).
        if !mailbox.pollsOnly, mailbox.listener?.isOpen != true, !mailbox.listenOpening {
            if mailbox.listener != nil { closeListener() }
            await openListener()
        }
        guard mailbox.startPoll() else { return }
        defer { mailbox.endPoll() }
        var rounds = 0
        var returned: Int?
        repeat {
            rounds += 1
            returned = await pollOnce()
        } while MailboxState.fetchAgain(after: rounds, returned: returned, page: Self.mailboxPage) && !life.isGone
        // No Realtime to hear of requests and acceptances on: they are read at each poll.
        if pairing.plan != nil, !life.isGone { await catchUpPairing() }
    }

    /// One `fetchMailbox`; how many messages it returned (nil: it failed).
    @discardableResult
    func pollOnce() async -> Int? {
        let clock = context.clock
        let started = clock.now(), startedWall = clock.wallNow()
        let throughListener = mailbox.listener?.isOpen == true
        let page: MailboxPage
        do {
            page = try await mailboxApp.fetchMailbox(limit: Self.mailboxPage, session: account.session, via: http)
        } catch {
            metrics.count(.httpRequests)
            metrics.count(.mailboxPollFailures)
            spendExchange(up: 0, down: 0, since: started)
            _ = countFailure(error)
            return nil
        }
        metrics.count(.httpRequests)
        metrics.record(.mailboxPoll, seconds: clock.now() - started)
        metrics.count(.mailboxPolls)
        metrics.count(.mailboxBytesDown, by: page.bytesDown)
        // What went over HTTP (a listener's look reads what was pushed to it, and sends nothing for it).
        if page.bytesUp + page.bytesDown > 0 { spendExchange(up: page.bytesUp, down: page.bytesDown, since: started) }
        for id in page.released { context.mailbox.released(id, at: clock.wallNow()) }
        context.mailbox.polled(index, at: startedWall, throughListener: throughListener)
        if let arrived = life.onlineSince { markListening(arrivedAt: arrived) }
        if page.items.isEmpty { metrics.count(.mailboxPollsEmpty) }
        if page.malformed > 0 { metrics.count(.mailboxRejected(reason: "malformed"), by: page.malformed) }
        for item in page.items { await take(item, polledAt: startedWall) }
        return page.items.count + page.malformed
    }

    /// A fetched message: checked against what was acknowledged, opened, shown once, acknowledged.
    private func take(_ item: MailboxItem, polledAt: Double) async {
        let seen = mailbox.fetched(item.id)
        guard context.mailbox.fetched(item.id), seen != .servedAfterAck else {
            // Its acknowledgement succeeded and the backend still serves it: not deleted.
            metrics.count(.mailboxAfterAck)
            return
        }
        if seen == .shownNotAcknowledged {
            // Shown already; its acknowledgement did not go through: once more.
            metrics.count(.mailboxDuplicates)
            await acknowledge(item.id)
            return
        }
        if becomingFriend(item.sender) {
            // Pairing during the run: a friend this phone has just accepted (its keys on their way), or one it asked
            // that accepted and wrote before this poll read the acceptance. It stays in the mailbox for the next poll.
            return
        }
        guard let sender = friendIndex[item.sender], let friend = friends.first(where: { $0.index == Int(sender) }), friend.active else {
            reject(item, reason: "not_a_friend")
            await acknowledge(item.id)
            return
        }
        let clock = context.clock
        let started = clock.now()
        let message: DirectMessage
        do { message = try mailboxApp.openDirect(item, from: friend, keys: account.keys) } catch {
            reject(item, reason: error == .badSignature ? "bad_signature" : "\(error)".hasPrefix("the decrypted") ? "bad_content" : "cannot_open")
            await acknowledge(item.id)
            return
        }
        let opening = clock.now() - started
        metrics.record(.open, seconds: opening)
        spendCPU(seconds: opening)
        let now = clock.wallNow()
        let latency = now - Double(message.sentNanos) / 1e9
        let wait = max(0, polledAt - item.createdAt)
        metrics.record(.mailboxLatency, seconds: latency)
        metrics.record(.mailboxPollWait, seconds: min(wait, max(0, latency)))
        metrics.record(.mailboxTransfer, seconds: max(0, latency - wait))
        metrics.count(.mailboxReceived)
        context.tally.received(by: index)
        context.mailbox.delivered(sender: Int(sender), seq: message.seq)
        mailbox.show(item.id)
        await acknowledge(item.id)
    }

    /// Whether `userID` is a friend in the making: accepted here, keys not read yet; or asked by this phone, unanswered.
    private func becomingFriend(_ userID: String) -> Bool {
        if let index = friendIndex[userID] { return !friends.contains { $0.index == Int(index) } }
        return pairing.asked[userID] != nil
    }

    private func reject(_ item: MailboxItem, reason: String) {
        metrics.count(.mailboxRejected)
        metrics.count(.mailboxRejected(reason: reason))
        context.mailbox.rejected(id: item.id, reason: reason)
    }

    /// `POST …/ack`: deleted by the backend from now on; a 404 says it was gone already.
    private func acknowledge(_ id: String) async {
        let clock = context.clock
        let started = clock.now()
        do {
            let receipt = try await mailboxApp.acknowledge(id, session: account.session, via: http)
            metrics.record(.mailboxAck, seconds: clock.now() - started)
            metrics.count(.mailboxAcks)
            spendExchange(up: receipt.bytesUp, down: receipt.bytesDown, since: started)
            mailbox.acknowledged(id)
            context.mailbox.acked(id)
        } catch {
            spendExchange(up: 0, down: 0, since: started)
            if error.status == 404 {
                metrics.count(.mailboxAckGone)
                context.mailbox.ackFoundGone(id)
                mailbox.acknowledged(id, gone: true)
            } else {
                metrics.count(.mailboxAckFailures)
                _ = countFailure(error)
            }
        }
        metrics.count(.httpRequests)
    }

    // MARK: Sessions

    /// Logs out (its tokens are refused from then on) and in again with its password, as a user who signs out does.
    func relogin(intended: Double) async {
        guard life.onlineSince != nil, let every = profile.reloginEvery else { return }
        context.scheduler.at(intended + rng.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.relogin(intended: t) }
        // A refresh under way ends first (its answer would otherwise be adopted over the new sign-in's).
        if let running = renewal.refreshing { await running.value }
        let clock = context.clock
        let started = clock.now()
        renewal.signingOut = true
        defer { renewal.signingOut = false }
        do {
            try await mailboxApp.signOut(account.session, via: http)
            let session = try await mailboxApp.signIn(email: account.email, password: account.password, via: http)
            metrics.record(.relogin, seconds: clock.now() - started)
            metrics.count(.relogins)
            spendHTTP(body: 200, response: 1_400, since: started)
            adopt(session, signedIn: true)
        } catch {
            metrics.count(.reloginFailures)
            _ = countFailure(error, renew: false)
            // Signed out and not in again: in again as the app would, with its password.
            await signInAgain()
        }
        metrics.count(.httpRequests, by: 2)
    }

    /// An exchange whose bytes libcurl counted (headers included), plus TCP/IP's.
    func spendExchange(up: Int, down: Int, since: Double) {
        let now = context.clock.now()
        if let link = profile.link, link.isOffline(at: ShapingProxy.now()) { return }
        let start = min(since, now)
        battery.ledger?.transfer(at: start, bytesUp: up + Self.tcpOverhead(up), bytesDown: down + Self.tcpOverhead(down), lasting: now - start)
    }

    /// TCP/IP headers for `bytes` of payload: 52 bytes a segment of 1,448 (and one segment at least).
    static func tcpOverhead(_ bytes: Int) -> Int { 52 * max(1, (bytes + 1447) / 1448) }
}
