import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire

/// Pairing during the run (greenbox-prd.md §5.2–5.3 for Green Box `pairing:
/// prd`): the phone asks its friends once it has arrived, answers the requests
/// it sees over Realtime (or finds pending when it first subscribes), and a
/// friend becomes one it shares with once the request is accepted. Measured
/// as load: `pairing_accept` is request → accepted as the asking phone sees
/// it, `pairing_first_update` request → the first update from that friend
/// decrypted here; a request its friend left at "decide later" and accepted
/// later is measured as `pairing_accept_later` and `pairing_first_update_later`.
extension VirtualDevice {
    /// Schedules this phone's requests after its arrival at `arrival`.
    func schedulePairing(arrival: Double) {
        guard let plan = pairing.plan else { return }
        for request in plan.requests {
            context.scheduler.at(arrival + request.after) { [weak self] _ in await self?.ask(request) }
        }
    }

    func ask(_ request: DevicePairing.Request) async {
        guard life.onlineSince != nil else { return }
        var started = context.clock.now()
        // What the app does first: QuickPic looks the friend up (`GET /users/:username`), Closer makes the couple key.
        do {
            if try await friendApp.prepareRequest(request.invitee, token: account.session.accessToken, via: http) {
                metrics.record(.pairingLookup, seconds: context.clock.now() - started)
                metrics.count(.httpRequests)
                spendHTTP(body: 0, response: 400, since: started)
            }
            // pairing_request is the request's round trip alone, whatever came before it.
            started = context.clock.now()
        } catch {
            metrics.count(.httpRequests)
            metrics.count(.pairingFailures)
            _ = countFailure(error, operation: "pairing_lookup")
            return
        }
        // Recorded before the request goes: its acceptance may arrive (Realtime) before the request's answer does.
        pairing.asked[request.userID] = (started, request)
        do {
            _ = try await friendApp.requestFriendship(to: request.invitee, preference: request.preference, from: account.session, via: http)
            metrics.count(.pairingRequests)
            metrics.record(.pairingRequest, seconds: context.clock.now() - started)
        } catch {
            pairing.asked[request.userID] = nil
            metrics.count(.pairingFailures)
            _ = countFailure(error, operation: "pairing_request")
        }
        metrics.count(.httpRequests)
        spendHTTP(body: 200, response: 400)
    }

    /// A friendship event from the app (over Realtime, or found pending).
    func pairingEvent(_ event: PairingEvent) {
        switch event {
        case .requested(let id, let from):
            guard pairing.answered.insert(id).inserted else { return }
            // A friend already asking again: it reinstalled (PRD §4.1); its shape answers it.
            if shapeAsksAgain(id, from: from) { return }
            guard let answer = pairing.plan?.answers[from] else {
                metrics.count(.pairingUnexpectedRequests)
                return
            }
            pairing.pendingFrom[from] = id
            if answer.declines, let delay = answer.delay {
                context.scheduler.at(context.clock.now() + delay) { [weak self] _ in await self?.decline(id, from: from) }
                return
            }
            guard let delay = answer.delay else {
                metrics.count(.pairingDecidedLater)
                // The run already had it accepted later, before the request came: it is accepted as it comes.
                if pairing.acceptWhenAsked.remove(from) != nil {
                    context.scheduler.at(context.clock.now() + 0.001) { [weak self] _ in await self?.acceptLaterNow(from: from) }
                }
                return
            }
            context.scheduler.at(context.clock.now() + delay) { [weak self] _ in await self?.accept(id, from: from) }
        case .accepted(_, let by):
            let at: Double?
            let request: DevicePairing.Request
            if let (t, r) = pairing.asked.removeValue(forKey: by) {
                (at, request) = (t, r)
                metrics.record(r.decidedLater ? .pairingAcceptLater : .pairingAccept, seconds: context.clock.now() - t)
            } else if let r = pairing.plan?.requests.first(where: { $0.userID == by }), friendIndex[by] == nil {
                // Its request failed here (a timeout after it committed) yet was accepted: a friend all the same, unmeasured.
                (at, request) = (nil, r)
            } else {
                return
            }
            // Its updates are this phone's to receive from now on; sharing with it waits for its key.
            friendIndex[by] = Int32(request.index)
            Task { [weak self] in
                await self?.befriend(userID: by, index: request.index, preference: request.preference, asInviter: true, requestedAt: at,
                                     later: request.decidedLater)
            }
        }
    }

    /// Accepts a request left at "decide later", as the run decides (`social.accept_later`).
    /// A request not there yet (its friend has not pairing.asked) is accepted when it comes.
    public func acceptLater(from userID: String) async {
        guard life.isReceiving else { return }
        if pairing.pendingFrom[userID] == nil { await fetchPendingRequests() }
        guard pairing.pendingFrom[userID] != nil else {
            pairing.acceptWhenAsked.insert(userID)
            return
        }
        await acceptLaterNow(from: userID)
    }

    func acceptLaterNow(from userID: String) async {
        guard let id = pairing.pendingFrom[userID] else { return }
        metrics.count(.pairingAcceptedLater)
        await accept(id, from: userID)
    }

    /// On subscribing (first, or again after a gap): requests made to this phone while it was not
    /// listening, and its own requests accepted meanwhile. Each event counts once however it arrives.
    func catchUpPairing() async {
        await fetchPairing(.requestsToMe)
        if !pairing.asked.isEmpty { await fetchPairing(.acceptedOfMine) }
    }

    /// What was pairing.asked of this phone while it was away (the PRD's "[name] has invited you!" after onboarding).
    func fetchPendingRequests() async { await fetchPairing(.requestsToMe) }

    enum PairingQuery { case requestsToMe, acceptedOfMine }

    /// Friendship events the app reads over REST, handled as those that come over Realtime.
    func fetchPairing(_ query: PairingQuery) async {
        let (me, token) = (account.userID, account.session.accessToken)
        do {
            let events = switch query {
            case .requestsToMe: try await friendApp.pendingRequests(to: me, token: token, via: http)
            case .acceptedOfMine: try await friendApp.acceptedRequests(by: me, token: token, via: http)
            }
            metrics.count(.httpRequests)
            spendHTTP(body: 0, response: 200 + 150 * events.count)
            for event in events { pairingEvent(event) }
        } catch {
            metrics.count(.httpRequests)
            _ = countFailure(error, operation: "pairing_fetch")
        }
    }

    /// Says no to request `id` (`social.decline`), as the app does (QuickPic: `POST /friends/reject`).
    func decline(_ id: String, from userID: String) async {
        guard life.isReceiving, pairing.pendingFrom[userID] == id else { return }
        pairing.pendingFrom[userID] = nil
        do {
            try await friendApp.declineFriendship(id, token: account.session.accessToken, via: http)
            metrics.count(.pairingDeclined)
        } catch {
            metrics.count(.pairingFailures)
            _ = countFailure(error, operation: "pairing_decline")
        }
        metrics.count(.httpRequests)
        spendHTTP(body: 60, response: 200)
    }

    func accept(_ id: String, from userID: String) async {
        guard life.isReceiving, let answer = pairing.plan?.answers[userID], pairing.pendingFrom[userID] == id else { return }
        pairing.pendingFrom[userID] = nil
        // The friend may share as soon as the acceptance commits: its updates are this phone's from now on.
        friendIndex[userID] = Int32(answer.index)
        do {
            try await friendApp.acceptFriendship(id, preference: answer.preference, token: account.session.accessToken, via: http)
            metrics.count(.httpRequests)
            spendHTTP(body: 60, response: 300)
            metrics.count(.pairingAccepted)
            if answer.delay == nil { metrics.count(.pairingAcceptedLaterSucceeded) }
        } catch {
            metrics.count(.httpRequests)
            _ = countFailure(error, operation: "pairing_accept")
            // Left at "decide later" and accepted after: the request may be gone (Closer's invites expire).
            if answer.delay == nil, case .http(404, _) = error.kind {
                // Gone: the invite expired unaccepted (or never was); asking again changes nothing.
                friendIndex[userID] = nil
                metrics.count(.pairingRequestsGone)
                return
            }
            // Once more a second later (accepting is idempotent: a timeout that committed finds the row active).
            if pairing.retryAccept.insert(id).inserted {
                pairing.pendingFrom[userID] = id
                context.scheduler.at(context.clock.now() + 1) { [weak self] _ in await self?.accept(id, from: userID) }
            } else {
                friendIndex[userID] = nil
                metrics.count(.pairingFailures)
            }
            return
        }
        await befriend(userID: userID, index: answer.index, preference: answer.preference, asInviter: false, requestedAt: nil)
    }

    /// Reads the new friend's key and shares with it from the next tick on (when this side shares: `LinkSharing`).
    func befriend(userID: String, index other: Int, preference: String, asInviter: Bool, requestedAt: Double?, later: Bool = false) async {
        let sharing = friendApp.sharing
        var key: FriendKeys?
        // A friend this phone only hears needs no key.
        if sharing.sends(asInviter: asInviter) {
            guard let k = await newFriendKey(userID) else { return }
            key = k
        }
        var friend = Friend(index: other, userID: userID, publicKey: key?.box, iShare: preference, active: true, signingKey: key?.signing,
                            deviceKey: key?.device)
        friend.share(sharing, asInviter: asInviter)
        if let i = friends.firstIndex(where: { $0.userID == userID }) { friends[i] = friend } else { friends.append(friend) }
        friendIndex[userID] = Int32(other)
        // The loop closes with the friend's first update: never, when it does not share with this phone.
        if let requestedAt, friend.hearsFrom { pairing.awaitingFirstUpdate[Int32(other)] = (requestedAt, later) }
        metrics.count(.pairingFriendsMade)
    }

    /// A new friend's keys, read as the app reads them; nil (counted) when they cannot be.
    private func newFriendKey(_ userID: String) async -> FriendKeys? {
        do {
            let keys = try await friendApp.friendKeys(of: [userID], token: account.session.accessToken, via: http)
            metrics.count(.httpRequests)
            spendHTTP(body: 0, response: 300)
            guard let k = keys[userID] else {
                metrics.count(.pairingFailures)
                return nil
            }
            return k
        } catch {
            metrics.count(.httpRequests)
            metrics.count(.pairingFailures)
            _ = countFailure(error, operation: "pairing_key_lookup")
            return nil
        }
    }

    /// The first update from a friend this phone asked: the pairing loop closed.
    func firstUpdate(from sender: Int32) {
        guard let (at, later) = pairing.awaitingFirstUpdate.removeValue(forKey: sender) else { return }
        metrics.record(later ? .pairingFirstUpdateLater : .pairingFirstUpdate, seconds: context.clock.now() - at)
    }
}
