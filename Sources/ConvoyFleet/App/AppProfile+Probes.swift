import ConvoySodium
import ConvoyWire

/// A probe cast's four accounts (docs/probes.md, "The cast"), as an app sets them up.
public struct ProbeCastSessions: Sendable {
    public var attacker: Session
    public var friend: Session
    public var victim: Session
    public var stranger: Session

    public init(attacker: Session, friend: Session, victim: Session, stranger: Session) {
        (self.attacker, self.friend, self.victim, self.stranger) = (attacker, friend, victim, stranger)
    }

    /// Each account by its role's name (`attacker`, `friend`, `victim`, `stranger`).
    public var byRole: [(role: String, session: Session)] {
        [("attacker", attacker), ("friend", friend), ("victim", victim), ("stranger", stranger)]
    }
}

/// Apps whose friends are pairs make a probe cast as two friendships: the friend befriends
/// the attacker and the victim, the stranger stays nobody's.
extension FriendApp {
    public var friendsAreCouples: Bool { false }

    public func formProbeCast(_ cast: ProbeCastSessions, serviceKey: String?, via http: SupabaseHTTP) async throws(SupabaseError) {
        try await befriendForProbes(cast.friend, with: [cast.attacker, cast.victim], via: http)
    }
}

/// An app's casts add no placeholders unless it says so.
extension AppProfile {
    public func probeValues(roles: [String: String]) -> [String: String] { [:] }

    public func probeMessages(keys: [String: BoxKeyPair]) -> [String: String] { [:] }
}
