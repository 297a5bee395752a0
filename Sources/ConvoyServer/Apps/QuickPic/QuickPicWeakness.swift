import Foundation

/// Ways to break QuickPic's server on purpose (`convoy serve --app quickpic --weaken NAME,…`; `--keep-acked`
/// is `keep-acked`): each undoes one rule, so a run or a probe catalogue can show that it catches the break.
/// Never for a server anyone relies on.
public enum QuickPicWeakness: String, ServerWeakness {
    /// An ACK is answered and deletes nothing: the message is served again.
    case keepAcked = "keep-acked"
    /// Anyone may ACK (and so delete) any message.
    case ackAny = "ack-any"
    /// Others' data by query: `GET /messages?to_user_id=X` lists X's mailbox, `GET /friends/requests?user_id=X` X's requests.
    case readByQuery = "read-by-query"
    /// Messages to users who are not friends are accepted.
    case anyRecipient = "any-recipient"
    /// Signatures are not verified.
    case unsigned
    /// `from_user_id` in the body is stored as the sender.
    case trustSender = "trust-sender"
    /// Anyone may accept or reject any friend request.
    case decideAny = "decide-any"
    /// A login for an unknown username answers at once, without the dummy Argon2id work: timing tells who exists.
    case fastUnknown = "fast-unknown"
    /// No failed-login limit.
    case noLoginLimit = "no-login-limit"
    /// Login says whether the username exists (`unknown_user` vs `invalid_credentials`).
    case revealUsernames = "reveal-usernames"
    /// No 5 MiB limit on a message's content.
    case noSizeLimit = "no-size-limit"
    /// Refresh tokens are neither rotated nor revoked, by refresh or by logout.
    case reusableRefresh = "reusable-refresh"
    /// Malformed messages are stored anyway: an unknown `content_type` as text, content that is not base64 as its bytes.
    case lenientInput = "lenient-input"
    /// Access tokens are read without checking signature, algorithm or expiry.
    case unverifiedTokens = "unverified-tokens"
}

/// Ways to break an app's own server on purpose (`--weaken NAME,…`): QuickPic's, Closer's.
public protocol ServerWeakness: RawRepresentable, CaseIterable, Hashable, Sendable where RawValue == String {}

extension ServerWeakness {
    /// Parses `--weaken`'s comma-separated names; the failure names the first it does not know.
    public static func parse(_ list: String) -> Result<Set<Self>, UnknownWeakness> {
        UnknownWeakness.names(list, known: allCases.map(\.rawValue)).map { Set($0.compactMap(Self.init(rawValue:))) }
    }
}

/// A `--weaken` name the app does not have.
public struct UnknownWeakness: Error, CustomStringConvertible, Equatable {
    public let name: String
    public let known: [String]
    public var description: String { "--weaken: no weakness \"\(name)\" (\(known.joined(separator: ", ")))" }

    /// `--weaken`'s comma-separated names, each one of `known`; the failure names the first that is not.
    static func names(_ list: String, known: [String]) -> Result<Set<String>, UnknownWeakness> {
        var out: Set<String> = []
        for name in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            guard known.contains(name) else { return .failure(UnknownWeakness(name: name, known: known)) }
            out.insert(name)
        }
        return .success(out)
    }
}
