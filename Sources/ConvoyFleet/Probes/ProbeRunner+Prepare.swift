import ConvoySodium
import ConvoyWire
import Foundation

extension ProbeRunner {
    /// Signs up a cast of its own for standalone use (tests, `convoy probe`):
    /// attacker, friend, victim, stranger, each with a published key pair;
    /// with `pair`, the app forms the cast (`AppProfile.formProbeCast`): the friend befriends the
    /// attacker and the victim, so the victim is a friend of the attacker's friend and the stranger
    /// nobody's; or, for an app of teams, the attacker and the friend share an operation, the victim
    /// has another (which needs the service key).
    ///
    /// `cast: .gotrue` (a catalogue's `cast: gotrue`) makes four GoTrue accounts and nothing else — no key
    /// published, no pairing — for a project with only the catalogue's own tables; its `setup` does the rest.
    public func prepare(runID: String = String(UUID().uuidString.prefix(8)).lowercased(), pair: Bool = true,
                        cast: ProbeCast = .app) async throws -> (attacker: ProbeParty, victims: ProbeVictims) {
        if cast == .gotrue { return try await prepareAccounts(runID: runID) }
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

    /// Four GoTrue accounts: through the admin API when the service key is known (a project that confirms
    /// emails), then a password sign-in; else `/signup`, as an app does.
    func prepareAccounts(runID: String) async throws -> (attacker: ProbeParty, victims: ProbeVictims) {
        let auth = SupabaseAuth(SupabaseHTTP(engine: engine, target: target))
        var parties: [ProbeParty] = []
        for role in ["attacker", "friend", "victim", "stranger"] {
            let email = "probe-\(runID)-\(role)@convoy.test"
            let password = Data(Sodium.randomBytes(18)).base64EncodedString()
            let session: Session
            if let service = target.serviceKey {
                try await auth.adminCreateUser(email: email, password: password, serviceKey: service)
                session = try await auth.signIn(email: email, password: password)
            } else {
                session = try await auth.signUp(email: email, password: password)
            }
            var party = ProbeParty(session: session)
            party.password = password
            parties.append(party)
        }
        return (parties[0], ProbeVictims(friend: parties[1], victim: parties[2], stranger: parties[3]))
    }
}
