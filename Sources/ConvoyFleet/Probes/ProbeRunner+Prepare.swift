import ConvoyWire
import Foundation

extension ProbeRunner {
    /// Signs up a cast of its own for standalone use (tests, `convoy probe`):
    /// attacker, friend, victim, stranger, each with a published key pair;
    /// with `pair`, the app forms the cast (`AppProfile.formProbeCast`): the friend befriends the
    /// attacker and the victim, so the victim is a friend of the attacker's friend and the stranger
    /// nobody's; or, for an app of teams, the attacker and the friend share an operation, the victim
    /// has another (which needs the service key).
    public func prepare(runID: String = String(UUID().uuidString.prefix(8)).lowercased(), pair: Bool = true) async throws
        -> (attacker: ProbeParty, victims: ProbeVictims) {
        let onboarding = Onboarding(engine: engine, target: target, runID: "probe-\(runID)", app: app)
        var accounts: [DeviceAccount] = []
        for i in 0..<4 { accounts.append(try await onboarding.signUp(i)) }
        let (attacker, friend, victim, stranger) = (accounts[0], accounts[1], accounts[2], accounts[3])
        if pair {
            try await app.formProbeCast(ProbeCastSessions(attacker: attacker.session, friend: friend.session, victim: victim.session,
                                                          stranger: stranger.session),
                                        serviceKey: target.serviceKey, via: SupabaseHTTP(engine: engine, target: target))
        }
        return (ProbeParty(attacker), ProbeVictims(friend: ProbeParty(friend), victim: ProbeParty(victim), stranger: ProbeParty(stranger)))
    }
}
