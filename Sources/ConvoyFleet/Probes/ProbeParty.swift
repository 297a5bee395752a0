import ConvoySodium
import ConvoyWire

/// One account the probes use: a device's session and, when the caller has
/// it, its key pair (the replay probe decrypts as the victim's device).
public struct ProbeParty: Sendable, CustomStringConvertible {
    public var session: Session
    public var keys: BoxKeyPair?
    /// The account's password, when the caller has it (a probe may sign in as a party it stole it from).
    public var password: String?
    public var userID: String { session.userID }
    public var description: String { "ProbeParty(user \(userID), tokens redacted)" }

    public init(session: Session, keys: BoxKeyPair? = nil) {
        (self.session, self.keys) = (session, keys)
    }

    /// A fleet device's account, as Onboarding produced it.
    public init(_ account: DeviceAccount) {
        self.init(session: account.session, keys: account.keys)
        password = account.password
    }
}

/// The accounts a hostile device probes, besides its own:
/// - `friend`: an active friend of the attacker's, and of the victim's;
/// - `victim`: a friend of that friend, not of the attacker;
/// - `stranger`: nobody's friend in this cast.
public struct ProbeVictims: Sendable {
    public var friend: ProbeParty
    public var victim: ProbeParty
    public var stranger: ProbeParty

    public init(friend: ProbeParty, victim: ProbeParty, stranger: ProbeParty) {
        (self.friend, self.victim, self.stranger) = (friend, victim, stranger)
    }
}
