import ConvoySodium
import ConvoyWire

/// Pairing during the run, for apps that have less of it than the protocol names.
extension FriendApp {
    /// Nothing to do before asking: the app asks by the friend's id.
    public func prepareRequest(_ invitee: Invitee, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool { false }

    /// No "no": the request stays pending (Green Box's "Decline/Decide Later", PRD §5.3; a Closer code nobody types in).
    public func declineFriendship(_ id: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {}

    /// Both friends share, as every built-in app's do.
    public var sharing: LinkSharing { .mutual }

    /// Friends ask by id or username; no code to expire.
    public var issuesInviteCodes: Bool { false }
}

/// Who shares their location once a friendship is active: both friends, or one side alone (a follow: the one who
/// asked sees the one who accepted, `invitee`; or the one who asked shows itself, `inviter`).
public enum LinkSharing: String, Sendable, CaseIterable {
    case mutual, inviter, invitee

    /// Whether the inviter's side (`asInviter`) or the invitee's seals its updates to the other.
    public func sends(asInviter: Bool) -> Bool {
        switch self {
        case .mutual: true
        case .inviter: asInviter
        case .invitee: !asInviter
        }
    }

    /// Whether that side hears the other's updates.
    public func hears(asInviter: Bool) -> Bool { sends(asInviter: !asInviter) }
}

/// A change in a friendship, as a phone that pairs during the run sees it.
public enum PairingEvent: Sendable, Equatable {
    /// `from` asked this phone to be friends (request `id`, as the app names it: a row's number, a code, a UUID).
    case requested(id: String, from: String)
    /// `by` accepted this phone's request `id` (empty when the app says only who).
    case accepted(id: String, by: String)
}

/// A friend's published keys: the one it is sealed to, the one its signatures are checked with (nil: the app signs
/// nothing), and a device key of the app's own kind (Closer's P-256 point; such an app has no box key).
public struct FriendKeys: Sendable, Equatable {
    public var box: PublicKey?
    public var signing: PublicKey?
    public var device: [UInt8]?

    public init(box: PublicKey, signing: PublicKey? = nil) { (self.box, self.signing) = (box, signing) }
    public init(device: [UInt8]) { self.device = device }
}

/// A friend to ask, as the inviter knows it: its user id, and the address its user gave (what a username is made from).
public struct Invitee: Sendable, Equatable {
    public var userID: String
    public var email: String

    public init(userID: String, email: String) { (self.userID, self.email) = (userID, email) }
}
