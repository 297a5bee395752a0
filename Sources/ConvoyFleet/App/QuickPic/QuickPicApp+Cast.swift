import ConvoyCrypto
import ConvoySodium
import ConvoyWire

/// QuickPic's probe cast: friendships as its users make them (quickpic-spec.md: asked by username, accepted).
extension QuickPicApp {
    /// A probe cast's friendships: requested by `friend`, accepted by each of `others`.
    public func befriendForProbes(_ friend: Session, with others: [Session], via http: SupabaseHTTP) async throws(SupabaseError) {
        for other in others {
            try await befriend(FriendRequest(inviter: friend, invitee: other, inviterPreference: "precise", inviteePreference: "precise",
                                             pending: false), via: http)
        }
    }
}
