import ConvoyCrypto
import ConvoySodium
import ConvoyWire

/// Closer's probe cast and placeholders (docs/probes.md, "Closer").
extension CloserApp {
    /// The probe cast (docs/probes.md, "Closer"): the attacker invites and the friend accepts (a couple); the
    /// victim has an invite no one has accepted yet (a live code); the stranger is in no couple.
    public func befriendForProbes(_ friend: Session, with others: [Session], via http: SupabaseHTTP) async throws(SupabaseError) {
        guard let attacker = others.first else { return }
        try await befriend(FriendRequest(inviter: attacker, invitee: friend, inviterPreference: "precise", inviteePreference: "precise",
                                         pending: false), via: http)
        if others.count > 1 {
            let victim = others[1]
            ledger.made(try await createInvite(token: victim.accessToken, via: http), by: victim.userID)
        }
    }

    /// The per-party placeholders a Closer cast fills: `invite_code` (the party's latest invite: the attacker's,
    /// used by its couple; the victim's, live) and `couple` (its couple's id).
    public static let probeFields = ["invite_code", "couple"]

    public func probeValues(roles: [String: String]) -> [String: String] {
        var values: [String: String] = [:]
        for (role, userID) in roles {
            if let code = ledger.latestCode(of: userID) { values["\(role).invite_code"] = code }
            if let couple = ledger.couple(of: userID) { values["\(role).couple"] = couple }
        }
        return values
    }
}
