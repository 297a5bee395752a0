import ConvoyWire
import Foundation

extension ProbeRunner {
    /// Signs up a cast of its own for standalone use (tests, `convoy probe`):
    /// attacker, friend, victim, stranger, each with a published key pair;
    /// with `pair`, the friend invites the attacker and the victim, who accept
    /// (Green Box's `create_invite`/`accept_invite`), so the victim is a friend
    /// of the attacker's friend and the stranger nobody's.
    public func prepare(runID: String = String(UUID().uuidString.prefix(8)).lowercased(), pair: Bool = true) async throws
        -> (attacker: ProbeParty, victims: ProbeVictims) {
        let onboarding = Onboarding(engine: engine, target: target, runID: "probe-\(runID)")
        var accounts: [DeviceAccount] = []
        for i in 0..<4 { accounts.append(try await onboarding.signUp(i)) }
        let (attacker, friend, victim, stranger) = (accounts[0], accounts[1], accounts[2], accounts[3])
        if pair {
            let rest = SupabaseREST(SupabaseHTTP(engine: engine, target: target))
            for invitee in [attacker, victim] {
                let invite = try await rest.rpc("create_invite", ["preference": "precise"], token: friend.session.accessToken)
                guard let code = (invite as? [String: Any])?["code"] as? String else { throw SupabaseError.unexpected("create_invite returned no code") }
                _ = try await rest.rpc("accept_invite", ["code": code, "preference": "precise"], token: invitee.session.accessToken)
            }
        }
        return (ProbeParty(attacker), ProbeVictims(friend: ProbeParty(friend), victim: ProbeParty(victim), stranger: ProbeParty(stranger)))
    }
}
