import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Logging

/// Joining a group that has started (Survale: "asks to join and is approved"): a member not let in at
/// set-up asks when it comes online and checks its request every `joinPollInterval`; its owner, who hears
/// the request live (or lists the pending ones when it subscribes), lets it in after a human's
/// `approve_after`; once let in, the member connects and joins the group's channels. `join_approval`:
/// asked → approved as the member reads it; `join_channel`: asked → on the channel.
extension VirtualDevice {
    /// How often a member waiting to be let in checks its request, seconds.
    static let joinPollInterval = 2.0

    func askToJoin() async {
        guard life.onlineSince != nil, group.joinRequest == nil else { return }
        let clock = context.clock
        let started = clock.now()
        if group.joinAskedAt == nil { (group.joinAskedAt, group.joinAskedOnLinks) = (started, ShapingProxy.now()) }
        metrics.count(.httpRequests)
        do {
            let id = try await groupApp.askToJoin(account.session, via: http)
            spendHTTP(body: 120, since: started)
            metrics.count(.joinRequests)
            group.joinRequest = (id, group.joinAskedAt ?? started)
            context.scheduler.at(clock.now() + Self.joinPollInterval) { [weak self] _ in await self?.pollJoin() }
        } catch {
            spendHTTP(body: 0, since: started)
            _ = countFailure(error)
            metrics.count(.joinRequestFailures)
            // Asked again a while later, as a person would, while it is online.
            context.scheduler.at(clock.now() + 5) { [weak self] _ in await self?.askToJoin() }
        }
    }

    /// Checks its request: still pending (again later), approved (it connects), or denied (it stays out).
    func pollJoin() async {
        guard life.onlineSince != nil, let request = group.joinRequest else { return }
        let clock = context.clock
        let started = clock.now()
        metrics.count(.httpRequests)
        metrics.count(.joinPolls)
        let decision: Bool?
        do {
            decision = try await groupApp.joinDecision(request.id, session: account.session, via: http)
            spendHTTP(body: 0, response: 40, since: started)
        } catch {
            spendHTTP(body: 0, since: started)
            _ = countFailure(error)
            context.scheduler.at(clock.now() + Self.joinPollInterval) { [weak self] _ in await self?.pollJoin() }
            return
        }
        switch decision {
        case nil:
            context.scheduler.at(clock.now() + Self.joinPollInterval) { [weak self] _ in await self?.pollJoin() }
        case true?:
            metrics.record(.joinApproval, seconds: clock.now() - request.askedAt)
            group.joinRequest = nil
            if group.outOfGroup, let realtime {
                // Back in: onto the channels it left, on the connection it kept.
                group.rejoining = true
                for s in groupChannels { realtime.join(s.topic, bindings: s.bindings, options: s.options) }
            } else {
                connect(at: clock.now())
            }
        case false?:
            group.joinRequest = nil
            context.logger.notice("device \(index): its join request was denied")
        }
    }

    /// An owner heard a request to its group: it decides after a while (it reads the request first).
    func heardJoinRequest(_ id: String) {
        guard let after = group.heard(joinRequest: id) else { return }
        let delay = rng.uniform(after.lowerBound, after.upperBound)
        context.scheduler.at(context.clock.now() + delay) { [weak self] _ in await self?.approveJoin(id) }
    }

    func approveJoin(_ id: String) async {
        guard !group.sawGroupEnd else { return }
        let started = context.clock.now()
        metrics.count(.httpRequests)
        do {
            try await groupApp.approveJoin(id, owner: account.session, via: http)
            spendHTTP(body: 60, since: started)
            metrics.count(.joinApproved)
        } catch {
            spendHTTP(body: 0, since: started)
            _ = countFailure(error)
            // Left for the list it reads when it next subscribes.
            group.deciding.remove(id)
        }
    }

    /// An owner subscribing (first or again): the requests it has not seen yet.
    func decidePending() async {
        guard group.role?.owner == true, !group.sawGroupEnd else { return }
        let started = context.clock.now()
        metrics.count(.httpRequests)
        do {
            let pending = try await groupApp.pendingJoinRequests(owner: account.session, via: http)
            spendHTTP(body: 0, response: 20 * pending.count, since: started)
            for id in pending { heardJoinRequest(id) }
        } catch {
            spendHTTP(body: 0, since: started)
            _ = countFailure(error)
        }
    }

    /// A member leaves its group for a while (its role's `leavesAt`): off the group's channels, out of the group
    /// on the backend (Survale: `leave_operation`), and asks to join again `rejoinAfter` later. Its teammates
    /// expect nothing of it meanwhile (it is not online to them). Its user leaves from the group's screen, which the app
    /// shows once the phone is on the group's channel: one whose time comes while it is still asking to be let in, or
    /// connecting, leaves once it is there (`groupSubscribed`), so that each ask is on the channel before the next.
    func leaveForAWhile() async {
        guard let role = group.role, !role.owner, life.onlineSince != nil, !group.outOfGroup, !group.sawGroupEnd else { return }
        guard group.joinRequest == nil, group.joinAskedAt == nil, life.subscribed, let realtime else {
            group.leaveDue = true
            return
        }
        group.leaveDue = false
        group.outOfGroup = true
        closeChatQueue("left")
        for s in groupChannels { realtime.leave(s.topic) }
        resetDirect()
        context.convergence.subscribed(index, false)
        context.presence.set(index, online: false)
        if let last = ledger.online.last, last.to == .infinity { ledger.online[ledger.online.count - 1].to = context.clock.wallNow() }
        metrics.count(.groupLeaves)
        let started = context.clock.now()
        metrics.count(.httpRequests)
        do {
            try await groupApp.leaveGroup(account.session, owner: false, via: http)
            spendHTTP(body: 60, since: started)
        } catch {
            spendHTTP(body: 0, since: started)
            _ = countFailure(error)
        }
        context.scheduler.at(context.clock.now() + role.rejoinAfter) { [weak self] _ in await self?.askToJoin() }
    }

    /// On its group's channel again after leaving it: online to its teammates from now.
    func backInGroup() {
        guard group.rejoining else { return }
        (group.rejoining, group.outOfGroup) = (false, false)
        context.presence.set(index, online: true)
        ledger.online.append(.init(from: context.clock.wallNow()))
        metrics.count(.groupRejoins)
        _ = joinedByRequest()
    }

    /// On its group's channel: if it had asked to join, how long that took (`join_channel`; `join_channel_online`
    /// without the time it or its owner had no network meanwhile: a phone in a tunnel neither hears nor gives an
    /// answer), and true; false for a member who never asked.
    func joinedByRequest() -> Bool {
        guard let asked = group.joinAskedAt else { return false }
        let waited = context.clock.now() - asked
        metrics.record(.joinChannel, seconds: waited)
        let (from, to) = (group.joinAskedOnLinks, ShapingProxy.now())
        let spans = [index, group.role?.ownerIndex].compactMap { $0.flatMap { context.links[$0] } }.flatMap { $0.offlineSpans(from: from, to: to) }
        metrics.record(.joinChannelOnline, seconds: max(0, waited - Self.covered(spans)))
        group.joinAskedAt = nil
        return true
    }

    /// The seconds the union of `spans` covers.
    static func covered(_ spans: [(start: Double, end: Double)]) -> Double {
        var (total, reach) = (0.0, -Double.infinity)
        for s in spans.sorted(by: { $0.start < $1.start }) where s.end > reach {
            total += s.end - max(s.start, reach)
            reach = s.end
        }
        return total
    }
}
