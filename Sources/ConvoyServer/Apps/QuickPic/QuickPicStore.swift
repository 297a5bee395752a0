import Foundation

/// What QuickPic's server keeps (quickpic-spec.md's data model), behind one protocol with two stores: the
/// embedded SQLite file (`QuickPicSQLiteStore`) and PostgreSQL (`QuickPicPostgresStore`). Access rules live
/// in the handlers (`QuickPicRoutes`), as in the spec's Go server: the store answers for one user at a time.
/// Messages are opaque bytes: nothing here reads them.
protocol QuickPicStore: Sendable {
    /// Creates a user; false when the username is taken.
    func insertUser(_ user: QuickPicUserRow, passwordHash: String) async throws -> Bool
    func user(username: String) async throws -> QuickPicUserRow?
    func user(id: String) async throws -> QuickPicUserRow?
    /// The user and password hash for a (lowercased) username.
    func credentials(username: String) async throws -> (user: QuickPicUserRow, hash: String)?

    /// A new session with its first refresh token (stored as its hash).
    func insertSession(id: String, userID: String, refreshHash: String, expiresAt: Date, now: Date) async throws
    /// Rotates the refresh token hashed `hash` to `freshHash`, in the same session (see `RefreshOutcome`).
    func rotate(refreshHash hash: String, freshHash: String, expiresAt: Date, now: Date) async throws -> QuickPicRefresh
    /// Ends a session: its refresh tokens and its access tokens are refused from now on.
    func endSession(_ sessionID: String) async throws
    func sessionIsLive(_ sessionID: String) async throws -> Bool

    /// A pending request from `from` to `to`, unless they are friends or a request is pending either way.
    func requestFriend(id: String, from: String, to: String, now: Date) async throws -> QuickPicRequestOutcome
    /// `userID`'s pending incoming requests, oldest first, with their senders' usernames.
    func incomingRequests(_ userID: String) async throws -> [QuickPicRequestRow]
    /// The addressee `userID` accepts (a friendship `friendshipID` is made) or rejects request `requestID`.
    func decide(_ requestID: String, by userID: String, accept: Bool, friendshipID: String, now: Date) async throws -> QuickPicDecision
    /// `userID`'s friends with their keys, oldest friendship first.
    func friends(_ userID: String) async throws -> [QuickPicFriendRow]
    func areFriends(_ a: String, _ b: String) async throws -> Bool

    /// Stores a message; its sequence orders a mailbox.
    func insertMessage(_ message: QuickPicMessageRow) async throws
    /// `userID`'s pending messages, oldest first.
    func mailbox(_ userID: String, limit: Int) async throws -> [QuickPicMessageRow]
    /// Message `id` addressed to `recipient` is acknowledged: deleted, or (`keep`, a weakened server) kept.
    /// False when there is no such message for `recipient`.
    func acknowledge(_ id: String, recipient: String, keep: Bool) async throws -> Bool
    /// Who message `id` is addressed to (a weakened server's ACK, `ack-any`).
    func recipient(ofMessage id: String) async throws -> String?
    /// Who friend request `id` is addressed to (a weakened server's decision, `decide-any`).
    func addressee(ofRequest id: String) async throws -> String?
    /// The user and session of a refresh token, revoked or not (a weakened server's refresh, `reusable-refresh`).
    func refreshOwner(_ hash: String) async throws -> (userID: String, sessionID: String)?
    /// The fallback purge: messages stored before `cutoff` go; how many went.
    func purgeMessages(before cutoff: Date) async throws -> Int
    /// Refresh tokens expired before `cutoff` go (housekeeping beside the purge).
    func purgeRefreshTokens(before cutoff: Date) async throws -> Int
}

struct QuickPicUserRow: Sendable, Equatable {
    var id: String
    var username: String
    var publicKey: [UInt8]
    var signingKey: [UInt8]
    var createdAt: Date
}

struct QuickPicRequestRow: Sendable, Equatable {
    var id: String
    var fromUserID: String
    var fromUsername: String?
    var toUserID: String
    var status: String
    var createdAt: Date
}

struct QuickPicFriendRow: Sendable, Equatable {
    var user: QuickPicUserRow
    var since: Date
}

struct QuickPicMessageRow: Sendable, Equatable {
    var id: String
    var from: String
    var to: String
    var content: [UInt8]
    var contentType: String
    var signature: String
    var createdAt: Date
}

enum QuickPicRefresh: Sendable, Equatable {
    case rotated(userID: String, sessionID: String)
    /// A token revoked (rotated or logged out) presented again: its session is ended (reuse detection).
    case reused
    case expired
    case notFound
}

enum QuickPicRequestOutcome: Sendable, Equatable {
    case created(QuickPicRequestRow)
    case alreadyFriends
    case pending
}

enum QuickPicDecision: Sendable, Equatable {
    case accepted(id: String, userA: String, userB: String, createdAt: Date)
    case rejected(QuickPicRequestRow)
    /// No such request addressed to the caller.
    case notFound
    case alreadyDecided
}

extension QuickPicStore {
    /// Friendships are stored once, the smaller id first (`user_a_id` < `user_b_id`).
    static func pair(_ a: String, _ b: String) -> (String, String) { a < b ? (a, b) : (b, a) }
}
