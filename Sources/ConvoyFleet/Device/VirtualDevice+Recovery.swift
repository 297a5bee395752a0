import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation

/// Recovery, as a real app recovers (docs/recovery.md): a token the backend
/// refuses is renewed by refresh, and if the refresh is refused too, by
/// signing in again; an insert that failed for a reason a retry can cure
/// waits in a bounded queue (the scenario's `retry:`) and is posted again
/// with exponential backoff until it is too old, in the order it was made.
extension VirtualDevice {
    /// One tick's updates waiting to be posted again.
    struct Queued: Sendable {
        /// Its tick in `ledger.sent`.
        var tick: Int
        var updates: [OutgoingUpdate]
        /// When it was made (Unix seconds): it is given up `maxAge` later.
        var wall: Double
        var attempts: Int
    }

    /// The reason a tick carries while its updates wait in the queue, and keep if the run ends first.
    static let unsent = "retry_unsent"

    var retryPolicy: RetryPolicy { context.options.retry }

    /// A tick whose insert failed (`reason`) or that waits behind one that did: queued for another attempt.
    /// The oldest update is given up when the queue is full.
    func enqueue(tick: Int, updates: [OutgoingUpdate], wall: Double, failed reason: String?) {
        ledger.sent[tick].failure = Self.unsent
        if outbox.count >= retryPolicy.queue { giveUpOldest("retry_queue_full") }
        // In tick order: an update that failed in flight is older than those that queued behind it meanwhile.
        let at = outbox.lastIndex(where: { $0.tick < tick }).map { $0 + 1 } ?? 0
        outbox.insert(Queued(tick: tick, updates: updates, wall: wall, attempts: reason == nil ? 0 : 1), at: at)
        metrics.count(.retryQueued)
        if let reason {
            context.health.insertFailed(reason, queued: true)
            if !flushPending { scheduleFlush(attempt: 1) }
        } else {
            // Behind an update in flight (which flushes the queue when it is done) or behind a queue already waiting.
            context.health.queuedBehind()
        }
    }

    private func giveUpOldest(_ reason: String) {
        let head = outbox.removeFirst()
        ledger.sent[head.tick].failure = reason
        metrics.count(.retryGivenUp)
        context.health.dequeued(posted: false, reason: reason)
    }

    private func scheduleFlush(attempt: Int) {
        flushPending = true
        let wait = retryPolicy.delay(attempt: attempt, unit: retryRNG.uniform())
        context.scheduler.at(context.clock.now() + wait) { [weak self] _ in await self?.flush() }
    }

    /// Posts the queue oldest first, until it is empty or an attempt fails (then after the next backoff).
    func flush() async {
        guard life.isReceiving else {
            flushPending = false
            return
        }
        let clock = context.clock
        while let head = outbox.first {
            if clock.wallNow() - head.wall > retryPolicy.maxAge {
                giveUpOldest("retry_expired")
                continue
            }
            let started = clock.now()
            posting = true
            defer { posting = false }
            do {
                let bytes = try await app.send(head.updates, from: account.session, via: http)
                metrics.record(.post, seconds: clock.now() - started)
                spendHTTP(body: bytes, since: started)
                metrics.count(.httpRequests)
                // The queue only shrinks here and in giveUpOldest, both on this actor with no await between check and removal.
                guard let i = outbox.firstIndex(where: { $0.tick == head.tick }) else { continue }
                outbox.remove(at: i)
                ledger.sent[head.tick].failure = nil
                ledger.sent[head.tick].retried = true
                metrics.count(.retryPosted)
                context.health.dequeued(posted: true)
            } catch {
                metrics.record(.postFailed, seconds: clock.now() - started)
                spendHTTP(body: Self.estimatedBody(head.updates), since: started)
                metrics.count(.httpRequests)
                let reason = countFailure(error)
                context.health.insertFailed(reason, queued: false)
                guard let i = outbox.firstIndex(where: { $0.tick == head.tick }) else { continue }
                guard RetryPolicy.isRetryable(status: error.status) else {
                    outbox.remove(at: i)
                    ledger.sent[head.tick].failure = reason
                    metrics.count(.retryGivenUp)
                    context.health.dequeued(posted: false, reason: reason)
                    continue
                }
                outbox[i].attempts += 1
                scheduleFlush(attempt: outbox[i].attempts)
                return
            }
        }
        flushPending = false
    }

    /// The run ended for this phone: what is still queued stays `retry_unsent`.
    func abandonQueue() {
        for _ in outbox { context.health.dequeued(posted: false, reason: Self.unsent) }
        outbox = []
    }

    // MARK: - Sessions

    /// The backend refused this phone's token (a 401, or a Realtime join refused for its token):
    /// renew the session once, unless it was renewed a moment ago (other requests refused with the same token).
    func renewAfterRefusal() async {
        let now = context.clock.now()
        if let last = renewedAt, now - last < 5 { return }
        renewedAt = now
        let before = account.session.accessToken
        await refresh()
        if account.session.accessToken != before, !signedInAgainLast { context.health.renewed(signedInAgain: false) }
    }

    /// The refresh token was refused: sign in again with the phone's email and password, as an app
    /// whose stored session is no longer good sends its user back through sign-in.
    func signInAgain() async {
        let started = context.clock.now()
        do {
            let session = try await app.signIn(email: account.email, password: account.password, via: http)
            spendHTTP(body: 120, response: 1_400, since: started)
            metrics.count(.httpRequests)
            metrics.record(.signInAgain, seconds: context.clock.now() - started)
            metrics.count(.signInsAgain)
            adopt(session, signedIn: true)
            context.health.renewed(signedInAgain: true)
        } catch {
            metrics.count(.httpRequests)
            _ = countFailure(error, renew: false)
            context.health.signInFailed()
            scheduleRefresh(at: context.clock.now() + 5)
        }
    }

    /// Whether a Realtime refusal is about the token (an expired or foreign JWT): renew before joining again.
    static func refusesToken(_ reason: String) -> Bool {
        let r = reason.lowercased()
        return r.contains("token") || r.contains("jwt")
    }
}
