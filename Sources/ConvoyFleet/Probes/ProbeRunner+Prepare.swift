import ConvoyWire
import Foundation

extension ProbeRunner {
    /// Signs up a cast of its own for standalone use (tests, `convoy probe`):
    /// attacker, friend, victim, stranger, each with a published key pair;
    /// with `pair`, the friend befriends the attacker and the victim as the app
    /// does, so the victim is a friend of the attacker's friend and the stranger nobody's.
    public func prepare(runID: String = String(UUID().uuidString.prefix(8)).lowercased(), pair: Bool = true) async throws
        -> (attacker: ProbeParty, victims: ProbeVictims) {
        let onboarding = Onboarding(engine: engine, target: target, runID: "probe-\(runID)", app: app)
        var accounts: [DeviceAccount] = []
        for i in 0..<4 { accounts.append(try await onboarding.signUp(i)) }
        let (attacker, friend, victim, stranger) = (accounts[0], accounts[1], accounts[2], accounts[3])
        if pair {
            try await app.befriendForProbes(friend.session, with: [attacker.session, victim.session], via: SupabaseHTTP(engine: engine, target: target))
        }
        return (ProbeParty(attacker), ProbeVictims(friend: ProbeParty(friend), victim: ProbeParty(victim), stranger: ProbeParty(stranger)))
    }
}
