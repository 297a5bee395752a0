import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation
import Synchronization

/// Direct messages between two members of a group (`social.dm_every`; Survale's ephemeral DMs): each phone sends
/// one to a partner drawn at random (`AppProfile.directPartners`: a member and its case agent) at that interval,
/// over the pair's private channel. Nothing stores them: one sent while its partner is off its channel is gone.
/// Accounted per message (`DirectLedger`); `direct_latency`: intended send → received.
extension VirtualDevice {
    /// The channels this phone is on: its app's, and with direct messages, one per partner.
    var channels: [AppSubscription] {
        let own = app.subscriptions(for: account.userID)
        guard context.options.directEvery != nil else { return own }
        return own + app.directChannels(for: account.userID)
    }

    func scheduleDirect(from arrival: Double) {
        guard let every = context.options.directEvery, !app.directPartners(of: account.userID).isEmpty else { return }
        context.scheduler.at(arrival + rng.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.sendDirect(intended: t) }
    }

    private func sendDirect(intended: Double) async {
        guard let every = context.options.directEvery, life.onlineSince != nil, !group.sawGroupEnd else { return }
        context.scheduler.at(intended + rng.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.sendDirect(intended: t) }
        let partners = app.directPartners(of: account.userID)
        guard !group.outOfGroup, !partners.isEmpty else { return }
        let partner = partners[Int(rng.next() % UInt64(partners.count))]
        guard let to = friendIndex[partner] else { return }
        group.directSeq += 1
        let wall = context.clock.wall(intended)
        let message = GroupMessage(seq: group.directSeq, sentNanos: Int64(wall * 1e9), text: "Convoy DM \(group.directSeq)")
        let online = context.presence.areOnline([Int(to)])[0]
        do {
            let bytes = try app.sendDirect(message, to: partner, from: account.session, realtime: realtime)
            spendSent(bytes: bytes)
            metrics.count(.directSent)
            if online { context.direct.posted(sender: index, seq: message.seq, to: Int(to), at: wall) } else { metrics.count(.directToOffline) }
        } catch {
            metrics.count(.directFailures)
            _ = countFailure(error, operation: "direct")
        }
    }

    func receiveDirect(_ message: GroupMessage, from sender: String, at receivedAt: Double) {
        guard let from = friendIndex[sender] else {
            metrics.count(.receivedFromStrangers)
            return
        }
        metrics.count(.directReceived)
        metrics.record(.directLatency, seconds: max(0, receivedAt - Double(message.sentNanos) / 1e9))
        context.direct.delivered(sender: Int(from), seq: message.seq, by: index)
    }
}

/// Every direct message sent to a partner online at the time, and whether it arrived: at the end each is
/// delivered or lost, `recipient_disconnected` when its partner's connection was down as it was sent (nothing
/// stores it), `not_received` otherwise.
public final class DirectLedger: Sendable {
    private struct State {
        var posted: [String: (to: Int, at: Double)] = [:]
        var delivered: Set<String> = []
    }

    private let state = Mutex(State())

    public init() {}

    private static func key(_ sender: Int, _ seq: UInt64) -> String { "\(sender):\(seq)" }

    func posted(sender: Int, seq: UInt64, to: Int, at: Double) { state.withLock { $0.posted[Self.key(sender, seq)] = (to, at) } }

    func delivered(sender: Int, seq: UInt64, by member: Int) { state.withLock { _ = $0.delivered.insert(Self.key(sender, seq)) } }

    var isEmpty: Bool { state.withLock { $0.posted.isEmpty && $0.delivered.isEmpty } }

    /// The accounting; `gaps(member)`: when that member's connection was down.
    func close(gaps: (Int) -> [DeviceLedger.Span]) -> MediaReport {
        let s = state.withLock { $0 }
        var report = MediaReport()
        report.expected = s.posted.count
        for (key, post) in s.posted {
            if s.delivered.contains(key) {
                report.delivered += 1
            } else {
                let down = gaps(post.to).contains { $0.from <= post.at && post.at < $0.to }
                report.lost[down ? "recipient_disconnected" : "not_received", default: 0] += 1
            }
        }
        report.unexpected = s.delivered.subtracting(s.posted.keys).count
        report.sent = s.posted.count
        return report
    }
}
