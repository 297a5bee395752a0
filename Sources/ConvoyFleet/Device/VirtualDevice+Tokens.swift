import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation

/// Access tokens: refreshed before they expire and pushed to the Realtime channel.
extension VirtualDevice {
    /// How long before expiry a token is refreshed: `refreshMargin`, at most a fifth of its lifetime.
    var refreshMargin: Double {
        let lifetime = max(0, account.session.expiresAt - context.clock.wallNow())
        return min(context.options.refreshMargin, lifetime / 5)
    }

    /// Schedules the next refresh; an earlier schedule (of an older session) lapses.
    func scheduleRefresh(at time: Double? = nil) {
        renewal.generation += 1
        let generation = renewal.generation
        let at = time ?? context.clock.monotonic(ofWall: account.session.expiresAt - refreshMargin)
        context.scheduler.at(at) { [weak self] _ in await self?.scheduledRefresh(generation) }
    }

    func scheduledRefresh(_ generation: Int) async {
        guard generation == renewal.generation else { return }
        await refresh()
    }

    /// A new session from the refresh token (which rotates), pushed to the
    /// Realtime channel. Concurrent callers wait for the one refresh in flight.
    func refresh() async {
        // Gone, or logging out and in (`relogin_every`): the session it would refresh is being replaced; the sign-in
        // brings a new one (a refresh now would send a refresh token the log-out revoked).
        if life.isGone || renewal.signingOut { return }
        if let running = renewal.refreshing {
            await running.value
            return
        }
        let task = Task { await self.performRefresh() }
        renewal.refreshing = task
        await task.value
        renewal.refreshing = nil
    }

    func performRefresh() async {
        let started = context.clock.now()
        do {
            let session = try await app.refresh(account.session, via: http)
            spendHTTP(body: 80, response: 1_400, since: started)  // a refresh token up; a session (two tokens and the user) down
            metrics.count(.httpRequests)
            metrics.record(.tokenRefresh, seconds: context.clock.now() - started)
            metrics.count(.tokenRefreshes)
            renewal.refreshes += 1
            if renewal.refreshes == 1 { metrics.count(.tokenRefreshPhones) }
            adopt(session, signedIn: false)
        } catch {
            metrics.count(.httpRequests)
            metrics.count(.tokenRefreshFailures)
            _ = countFailure(error, renew: false)
            if let status = error.status, (400..<500).contains(status), status != 408, status != 429 {
                // The refresh token itself is refused (revoked, or unknown to a backend that lost it): sign in again.
                await signInAgain()
            } else {
                // No answer, or "later": the same refresh token in a while.
                scheduleRefresh(at: context.clock.now() + 5)
            }
        }
    }

    /// A new session (refreshed, or signed in again): kept, pushed to the Realtime channel, its refresh scheduled.
    func adopt(_ session: Session, signedIn: Bool) {
        account.session = session
        realtime?.setAccessToken(session.accessToken)
        renewal.signedInAgainLast = signedIn
        scheduleRefresh()
    }
}

/// How a phone's session is being renewed: the refresh in flight, which every caller waits for; the
/// generation of the scheduled one; when it was last renewed after a refusal, and whether by signing in.
struct SessionRenewal: Sendable {
    var refreshing: Task<Void, Never>?
    var generation = 0
    var renewedAt: Double?
    var signedInAgainLast = false
    /// Refreshes that went through.
    var refreshes = 0
    /// Logging out and in again (`relogin_every`) is under way: no refresh meanwhile.
    var signingOut = false
}
