import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation
import Synchronization

/// Direct messages between two members of a group (`social.dm_every`; Survale's ephemeral DMs): each phone sends
/// one to a partner drawn at random (`GroupApp.directPartners`: Survale's any other member of the operation) at that interval,
/// over the pair's private channel. Nothing stores them: one sent while its partner is off its channel is gone.
/// Accounted per message (`DirectLedger`); `direct_latency`: intended send → received.
///
/// A pair's channel lets the two in only while both are members of the running group, so a phone opens it when
/// it sees its partner on the group's channel (its presence), not before: a member still asking to be let in, or
/// out for a while, is not refused a channel meanwhile, and its partner is not refused one either. A pair's channel
/// is the pair's alone: its joins, refusals and closes never stand for the phone's place in its group.
extension VirtualDevice {
    /// The channels a group phone is on: its app's, and with direct messages, the pair channels it has opened.
    var groupChannels: [AppSubscription] {
        let own = groupApp.subscriptions(for: account.userID)
        guard !group.directOpen.isEmpty else { return own }
        return own + group.directOpen.keys.sorted().map { group.directOpen[$0]! }
    }

    /// A new connection, or out of its group for a while: no pair channel is open on it (any it had are gone).
    func resetDirect() {
        let now = context.clock.wallNow()
        for partner in group.directOpen.keys { if let p = friendIndex[partner] { context.direct.closed(index, with: Int(p), at: now) } }
        group.directOpen = [:]
    }

    func scheduleDirect(from arrival: Double) {
        guard let every = context.options.directEvery, !groupApp.directPartners(of: account.userID).isEmpty else { return }
        context.scheduler.at(arrival + group.directRNG.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.sendDirect(intended: t) }
    }

    /// Teammates seen on the group's channel: a partner among them is a member now, so their pair's channel is opened.
    func sawTeammates(_ userIDs: [String]) {
        guard context.options.directEvery != nil, let realtime, !group.outOfGroup, !group.sawGroupEnd else { return }
        let unopened = userIDs.filter { group.directOpen[$0] == nil }
        guard !unopened.isEmpty else { return }
        let partners = groupApp.directPartners(of: account.userID)
        for partner in unopened where partners.contains(partner) {
            guard let channel = groupApp.directChannel(for: account.userID, with: partner) else { continue }
            group.directOpen[partner] = channel
            realtime.join(channel.topic, bindings: channel.bindings, options: channel.options)
        }
    }

    /// What happened on a pair's channel: true when `event` was about one (the phone's place in its group is not).
    /// Refused (its partner left, or the group ended, since it was seen) or closed: the channel is let go, and opened
    /// again when the partner is next seen.
    func directChannelEvent(_ event: RealtimeClient.Event) -> Bool {
        switch event {
        case .subscribed(let topic):
            guard let partner = group.directOpen.first(where: { $0.value.topic == topic })?.key else { return false }
            metrics.count(.directChannelsJoined)
            if let p = friendIndex[partner] { context.direct.opened(index, with: Int(p), at: context.clock.wallNow()) }
            return true
        case .joinFailed(let topic, _), .channelClosed(let topic, _):
            guard let partner = group.directOpen.first(where: { $0.value.topic == topic })?.key else { return false }
            group.directOpen[partner] = nil
            if let p = friendIndex[partner] { context.direct.closed(index, with: Int(p), at: context.clock.wallNow()) }
            metrics.count(.directChannelsRefused)
            realtime?.leave(topic)
            return true
        default:
            return false
        }
    }

    private func sendDirect(intended: Double) async {
        guard let every = context.options.directEvery, life.onlineSince != nil, !group.sawGroupEnd else { return }
        context.scheduler.at(intended + group.directRNG.uniform(every.lowerBound, every.upperBound)) { [weak self] t in await self?.sendDirect(intended: t) }
        let partners = groupApp.directPartners(of: account.userID)
        guard !group.outOfGroup, !partners.isEmpty else { return }
        let partner = partners[Int(group.directRNG.next() % UInt64(partners.count))]
        guard let to = friendIndex[partner] else { return }
        group.directSeq += 1
        let wall = context.clock.wall(intended)
        let message = GroupMessage(seq: group.directSeq, sentNanos: Int64(wall * 1e9), text: "Convoy DM \(group.directSeq)")
        guard context.presence.areOnline([Int(to)])[0] else {
            // Its partner is not on the group now: the app shows it offline, and nothing would carry the message.
            metrics.count(.directToOffline)
            return
        }
        guard group.directOpen[partner] != nil else {
            // Online, yet not seen on the group's channel by this phone: the pair's channel is not open to write on.
            metrics.count(.directNotOpen)
            return
        }
        do {
            let bytes = try groupApp.sendDirect(message, to: partner, from: account.session, realtime: realtime)
            spendSent(bytes: bytes)
            metrics.count(.directSent)
            context.direct.posted(sender: index, seq: message.seq, to: Int(to), at: wall)
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
/// stores it), `partner_not_on_pair_channel` when the partner had not joined the pair's channel (yet, or again)
/// as it was sent (the sender opens its side on seeing the partner, the partner on seeing the sender: a message
/// written between the two reaches nobody), `not_received` otherwise.
public final class DirectLedger: Sendable {
    private struct State {
        var posted: [String: (sender: Int, to: Int, at: Double)] = [:]
        var delivered: Set<String> = []
        /// When each member was on its pair channel with each partner (wall clock), by `"member>partner"`.
        var onPairChannel: [String: [DeviceLedger.Span]] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    private static func key(_ sender: Int, _ seq: UInt64) -> String { "\(sender):\(seq)" }
    private static func pair(_ member: Int, _ partner: Int) -> String { "\(member)>\(partner)" }

    func posted(sender: Int, seq: UInt64, to: Int, at: Double) { state.withLock { $0.posted[Self.key(sender, seq)] = (sender, to, at) } }

    /// `member` joined its pair channel with `partner` at `at`.
    func opened(_ member: Int, with partner: Int, at: Double) {
        state.withLock { s in
            let key = Self.pair(member, partner)
            if s.onPairChannel[key]?.last?.to.isFinite == false { return }
            s.onPairChannel[key, default: []].append(.init(from: at))
        }
    }

    /// `member` left (or lost) its pair channel with `partner` at `at`.
    func closed(_ member: Int, with partner: Int, at: Double) {
        state.withLock { s in
            let key = Self.pair(member, partner)
            guard let last = s.onPairChannel[key]?.indices.last, s.onPairChannel[key]![last].to == .infinity else { return }
            s.onPairChannel[key]![last].to = at
        }
    }

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
                let joined = (s.onPairChannel[Self.pair(post.to, post.sender)] ?? []).contains { $0.from <= post.at && post.at < $0.to }
                report.lost[down ? "recipient_disconnected" : joined ? "not_received" : "partner_not_on_pair_channel", default: 0] += 1
            }
        }
        report.unexpected = s.delivered.subtracting(s.posted.keys).count
        report.sent = s.posted.count
        return report
    }
}
