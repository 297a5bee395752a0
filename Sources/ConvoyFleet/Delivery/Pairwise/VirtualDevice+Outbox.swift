import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation

/// The pairwise shape's outbox (docs/recovery.md): an insert that failed for a reason a retry can cure
/// waits in a bounded queue (the scenario's `retry:`) and is posted again with exponential backoff
/// until it is too old, in the order it was made.
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
        if pairwise.outbox.count >= retryPolicy.queue { giveUpOldest("retry_queue_full") }
        // In tick order: an update that failed in flight is older than those that queued behind it meanwhile.
        let at = pairwise.outbox.lastIndex(where: { $0.tick < tick }).map { $0 + 1 } ?? 0
        pairwise.outbox.insert(Queued(tick: tick, updates: updates, wall: wall, attempts: reason == nil ? 0 : 1), at: at)
        metrics.count(.retryQueued)
        if let reason {
            context.health.insertFailed(reason, queued: true)
            if !pairwise.flushPending { scheduleFlush(attempt: 1) }
        } else {
            // Behind an update in flight (which flushes the queue when it is done) or behind a queue already waiting.
            context.health.queuedBehind()
        }
    }

    private func giveUpOldest(_ reason: String) {
        let head = pairwise.outbox.removeFirst()
        ledger.sent[head.tick].failure = reason
        metrics.count(.retryGivenUp)
        context.health.dequeued(posted: false, reason: reason)
    }

    private func scheduleFlush(attempt: Int) {
        pairwise.flushPending = true
        let wait = retryPolicy.delay(attempt: attempt, unit: retryRNG.uniform())
        context.scheduler.at(context.clock.now() + wait) { [weak self] _ in await self?.flush() }
    }

    /// Posts the queue oldest first, until it is empty or an attempt fails (then after the next backoff).
    func flush() async {
        guard life.isReceiving else {
            pairwise.flushPending = false
            return
        }
        let clock = context.clock
        while let head = pairwise.outbox.first {
            if clock.wallNow() - head.wall > retryPolicy.maxAge {
                giveUpOldest("retry_expired")
                continue
            }
            let started = clock.now()
            pairwise.posting = true
            defer { pairwise.posting = false }
            do {
                let posted = try await pairwiseApp.send(head.updates, from: account.session, via: http)
                metrics.record(.post, seconds: clock.now() - started)
                spendHTTP(body: posted.bytes, requests: posted.requests, since: started)
                metrics.count(.httpRequests, by: posted.requests)
                // The queue only shrinks here and in giveUpOldest, both on this actor with no await between check and removal.
                guard let i = pairwise.outbox.firstIndex(where: { $0.tick == head.tick }) else { continue }
                pairwise.outbox.remove(at: i)
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
                guard let i = pairwise.outbox.firstIndex(where: { $0.tick == head.tick }) else { continue }
                guard RetryPolicy.isRetryable(status: error.status) else {
                    pairwise.outbox.remove(at: i)
                    ledger.sent[head.tick].failure = reason
                    metrics.count(.retryGivenUp)
                    context.health.dequeued(posted: false, reason: reason)
                    continue
                }
                pairwise.outbox[i].attempts += 1
                scheduleFlush(attempt: pairwise.outbox[i].attempts)
                return
            }
        }
        pairwise.flushPending = false
    }

    /// The run ended for this phone: what is still queued stays `retry_unsent`.
    func abandonQueue() {
        for _ in pairwise.outbox { context.health.dequeued(posted: false, reason: Self.unsent) }
        pairwise.outbox = []
    }
}
