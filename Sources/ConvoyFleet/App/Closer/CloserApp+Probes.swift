import ConvoyCrypto
import ConvoySodium
import ConvoyWire

/// Closer's pairing through the set-up seam (the invite codes Green Box's `invite`/`accept` name), and its
/// probe cast and placeholders (docs/probes.md, "Closer").
extension CloserApp {
    /// Green Box's invite codes, at set-up: Closer's invite, made by the inviter.
    public func invite(preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        let code = try await createInvite(token: token, via: http)
        if let me = Self.subject(token) { ledger.made(code, by: me) }
        return code
    }

    public func accept(code: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        let couple = try await acceptInvite(code, token: token, via: http)
        if let me = Self.subject(token), let inviter = ledger.inviter(of: code) { ledger.paired(inviter, me, couple: couple) }
    }

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

    /// No location rows to replay.
    public func updateRequest(sender: String, recipient: String, body: String) -> AppRequest {
        AppRequest(method: "POST", path: "/acceptInviteCallable", headers: [], fields: [])
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
