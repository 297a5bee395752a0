import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation

/// Recovery, as a real app recovers (docs/recovery.md): a token the backend
/// refuses is renewed by refresh, and if the refresh is refused too, by
/// signing in again. (An insert that failed waits in the pairwise shape's
/// outbox: `Delivery/Pairwise/VirtualDevice+Outbox.swift`.)
extension VirtualDevice {
    /// The backend refused this phone's token (a 401, or a Realtime join refused for its token):
    /// renew the session once, unless it was renewed a moment ago (other requests refused with the same token).
    func renewAfterRefusal() async {
        let now = context.clock.now()
        if let last = renewal.renewedAt, now - last < 5 { return }
        renewal.renewedAt = now
        let before = account.session.accessToken
        await refresh()
        if account.session.accessToken != before, !renewal.signedInAgainLast { context.health.renewed(signedInAgain: false) }
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
