import ConvoyCrypto
import ConvoySodium
import ConvoyWire

/// What QuickPic does not do: it shares no locations, pushes nothing on Realtime, has no invite codes and no
/// key rotation (quickpic-spec.md, "Out of Scope"). A phone never calls these for a mailbox app; a scenario
/// that would (migration) is refused when it is read.
extension QuickPicApp {
    static func unsupported(_ what: String) -> SupabaseError {
        SupabaseError(kind: .unexpectedResponse, message: "QuickPic has no \(what)")
    }

    public func publishKey(_ key: PublicKey, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        throw Self.unsupported("key rotation (its keys are published once, at registration)")
    }

    public func invite(preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        throw Self.unsupported("invite codes (friends are asked by username)")
    }

    public func accept(code: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        throw Self.unsupported("invite codes (friends are asked by username)")
    }

    /// A probe cast's friendships: requested by `friend`, accepted by each of `others`.
    public func befriendForProbes(_ friend: Session, with others: [Session], via http: SupabaseHTTP) async throws(SupabaseError) {
        for other in others {
            try await befriend(FriendRequest(inviter: friend, invitee: other, inviterPreference: "precise", inviteePreference: "precise",
                                             pending: false), via: http)
        }
    }

    /// A replayed message: `ciphertext` is a captured `POST /messages` body, re-posted as it was.
    public func updateRequest(sender: String, recipient: String, body: String) -> AppRequest {
        AppRequest(method: "POST", path: "/messages", headers: [], fields: [("to_user_id", recipient), ("encrypted_content", body)])
    }
}
