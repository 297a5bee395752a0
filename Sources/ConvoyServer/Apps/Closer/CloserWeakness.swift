import Foundation

/// Ways to break Closer's server on purpose (`convoy serve --app closer --weaken NAME,…`): each undoes one
/// rule of closer-engineering-manual.md, so a probe catalogue or a run can show that it catches the break.
public enum CloserWeakness: String, ServerWeakness {
    /// `acceptInviteCallable` counts no attempts (as `--rate-limits off`).
    case noAcceptLimit = "no-accept-limit"
    /// An invite past its 24 h TTL is still accepted.
    case acceptExpired = "accept-expired"
    /// A used (or expired) code answers apart from an unknown one: `FAILED_PRECONDITION` "already used".
    case revealUsed = "reveal-used"
    /// Any signed-in user reads any `invites/{code}` document: the codes are enumerable through Firestore.
    case readableInvites = "readable-invites"
    /// A couple's members may write its `couples/{id}` document directly.
    case clientCoupleWrites = "client-couple-writes"
    /// Clients may write `invites/{code}` documents themselves (as their inviter).
    case clientInviteWrites = "client-invite-writes"
    /// Any signed-in user reads any `users/{uid}`, its devices and any `couples/{id}`.
    case readableDocuments = "readable-documents"
    /// A user may set `hasPremium` on its own document.
    case clientPremium = "client-premium"
    /// ID tokens are read without checking their signature, algorithm or expiry.
    case unverifiedTokens = "unverified-tokens"
    /// A couple's member writes any answer of the couple's daily question, rewrites one after the fact, and writes release
    /// keys for anyone, before answering and as often as it likes.
    case looseAnswers = "loose-answers"
}
