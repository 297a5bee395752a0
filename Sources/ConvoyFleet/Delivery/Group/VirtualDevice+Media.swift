import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation

/// A chat post on its way: the line, and the photo or video to upload before it (nil: a text line, or uploaded already).
struct ChatPost: Sendable {
    var message: GroupMessage
    var upload: (kind: MediaKind, size: Int)?
    /// Its intended time, on the run's monotonic clock.
    var intended: Double
}

/// Group apps' chat media (Survale's photos and short videos, `photo_every` and `video_every`) and the retry
/// queue every chat post goes through: each phone uploads random bytes of a size drawn from its group's
/// range, then posts the chat line naming them; every member online then should hear the line and download
/// the media (`media_latency`: intended send → downloaded). A post or upload that fails for a reason a retry
/// can cure is tried again with backoff while the group is on (`ChatRetryQueue`).
extension VirtualDevice {
    /// Schedules each of its group's media plans from `arrival`, the first at a random phase of its interval
    /// (a phone arrives in the middle of its life: a video every half hour may come in the first minutes).
    func scheduleMedia(from arrival: Double) {
        for plan in profile.media {
            context.scheduler.at(arrival + rng.uniform(0, plan.every.upperBound)) { [weak self] t in
                await self?.sendMedia(plan, intended: t)
            }
        }
    }

    func sendMedia(_ plan: MediaPlan, intended: Double) async {
        guard life.onlineSince != nil, !group.sawGroupEnd else { return }
        context.scheduler.at(intended + rng.uniform(plan.every.lowerBound, plan.every.upperBound)) { [weak self] t in
            await self?.sendMedia(plan, intended: t)
        }
        guard !group.outOfGroup else { return }
        messageSeq += 1
        let size = Int.random(in: plan.size, using: &rng)
        let message = GroupMessage(seq: messageSeq, sentNanos: Int64(context.clock.wall(intended) * 1e9), text: "Convoy \(plan.kind.rawValue) \(messageSeq)")
        await attempt(ChatPost(message: message, upload: (plan.kind, size), intended: intended), attempts: 0)
    }

    /// One attempt at `post` (the first when `attempts` is 0): its upload if not done, then its chat line.
    func attempt(_ post: ChatPost, attempts: Int) async {
        let clock = context.clock
        var post = post
        let media = post.upload != nil || post.message.media != nil
        if attempts > 0 { metrics.count(media ? .mediaRetried : .messagesRetried) }
        var started = clock.now()
        do {
            if let upload = post.upload {
                let bytes = Self.mediaBytes(upload.size, seed: rng.next())
                let metrics = self.metrics
                let ref = try await groupApp.uploadMedia(upload.kind, bytes: bytes, seq: post.message.seq, from: account.session, via: http) { p in
                    if p.uploaded > 0 { metrics.count(.mediaProgress) }
                }
                spendHTTP(body: bytes.count, response: 400, since: started)
                metrics.count(.httpRequests, by: 2)
                metrics.count(.mediaBytesUp, by: bytes.count)
                metrics.record(.mediaUpload, seconds: clock.now() - post.intended)
                post.message.media = ref
                post.upload = nil
                group.contributed[.media, default: 0] += 1
                started = clock.now()
            }
            let members = friends.filter(\.active).map(\.index)
            let online = zip(members, context.presence.areOnline(members)).compactMap { $1 ? $0 : nil }
            let bytes = try await groupApp.sendMessage(post.message, from: account.session, via: http)
            metrics.record(.messagePost, seconds: clock.now() - started)
            metrics.count(.httpRequests)
            spendHTTP(body: bytes, since: started)
            group.contributed[.messages, default: 0] += 1
            if media {
                metrics.count(.mediaSent)
                metrics.count(.mediaExpected, by: online.count)
                context.media.posted(sender: index, seq: post.message.seq, members: online, at: clock.wallNow())
            } else {
                metrics.count(.messagesSent)
                metrics.count(.messagesExpected, by: online.count)
                context.messages.posted(sender: index, seq: post.message.seq, members: online, at: clock.wallNow())
            }
        } catch {
            spendHTTP(body: 0, since: started)
            metrics.count(.httpRequests)
            let reason = countFailure(error)
            let verdict = group.chatQueue.failed(post, madeAt: post.intended, attempts: attempts + 1, reason: reason,
                                           retryable: Self.cures(error), now: clock.now(), unit: retryRNG.uniform())
            switch verdict {
            case .retry(let id, let at):
                context.scheduler.at(at) { [weak self] _ in await self?.retryChat(id) }
            case .givenUp(let reason):
                giveUp(post, reason: reason)
            }
        }
    }

    func retryChat(_ id: Int) async {
        guard let entry = group.chatQueue.take(id) else { return }
        await attempt(entry.item, attempts: entry.attempts)
    }

    /// Its group ended or it left: nothing waiting is tried again.
    func closeChatQueue(_ reason: String) {
        for entry in group.chatQueue.close(reason) { giveUp(entry.item, reason: reason) }
    }

    private func giveUp(_ post: ChatPost, reason: String) {
        let media = post.upload != nil || post.message.media != nil
        metrics.count(media ? .mediaFailed : .messagesFailed)
        metrics.count(media ? .mediaFailed(reason: reason) : .messagesFailed(reason: reason))
    }

    /// Whether another attempt may cure `error`: no answer at all, or a status that says "later".
    static func cures(_ error: SupabaseError) -> Bool {
        if let status = error.status { return RetryPolicy.isRetryable(status: status) }
        if case .wire = error.kind { return true }
        return false
    }

    /// `size` random bytes (a compressed photo or video is incompressible), from `seed`.
    static func mediaBytes(_ size: Int, seed: UInt64) -> [UInt8] {
        var g = SeededGenerator(seed: seed, stream: 0x3ED1A)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var i = 0
            while i < size {
                var word = g.next()
                for _ in 0..<min(8, size - i) {
                    buffer[i] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    i += 1
                }
            }
            count = size
        }
    }

    // MARK: Receiving

    /// A teammate's chat line with media (heard live, or loaded after a gap: `caughtUp`): downloaded at once,
    /// beside whatever else the phone is doing.
    func fetchMedia(_ media: MediaRef, of message: GroupMessage, from sender: Int32, caughtUp: Bool = false) {
        tasks.append(Task { [weak self] in await self?.download(media, of: message, from: Int(sender), caughtUp: caughtUp) })
    }

    /// How many times a download that failed for a curable reason is tried again (1, 2, then 4 s later, jittered).
    static let downloadRetries = 3

    private func download(_ media: MediaRef, of message: GroupMessage, from sender: Int, caughtUp: Bool, attempt: Int = 0) async {
        let clock = context.clock
        let started = clock.now()
        do {
            let bytes = try await groupApp.fetchMedia(media, as: account.session, via: http)
            spendHTTP(body: 0, response: bytes + 400, since: started)
            metrics.count(.httpRequests, by: 2)
            metrics.count(.mediaBytesDown, by: bytes)
            guard bytes == media.bytes else {
                context.media.failed(sender: sender, seq: message.seq, by: index, reason: "bad_size")
                return
            }
            metrics.record(.mediaDownload, seconds: clock.now() - started)
            let latency = clock.wallNow() - Double(message.sentNanos) / 1e9
            metrics.count(.mediaReceived)
            if caughtUp {
                metrics.count(.mediaCaughtUp)
                metrics.record(.mediaCatchUpLatency, seconds: latency)
            } else {
                metrics.record(.mediaLatency, seconds: latency)
            }
            context.media.delivered(sender: sender, seq: message.seq, by: index, caughtUp: caughtUp)
        } catch {
            spendHTTP(body: 0, since: started)
            metrics.count(.httpRequests)
            let reason = countFailure(error)
            // The phone off its network mid-download, or the server saying "later": the app loads the image again.
            if Self.cures(error), attempt < Self.downloadRetries, !life.isGone, !group.outOfGroup {
                metrics.count(.mediaDownloadRetries)
                let delay = Double(1 << attempt) * retryRNG.uniform(0.8, 1.2)
                context.scheduler.at(clock.now() + delay) { [weak self] _ in
                    await self?.download(media, of: message, from: sender, caughtUp: caughtUp, attempt: attempt + 1)
                }
                return
            }
            context.media.failed(sender: sender, seq: message.seq, by: index, reason: "download_" + reason)
        }
    }
}
