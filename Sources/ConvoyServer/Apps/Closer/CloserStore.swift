import ConvoyJSON
import Foundation
import Synchronization

/// Closer's server-side state, in memory (Firebase Auth's users and the Firestore documents pairing and the daily
/// question touch: `users/{uid}` with its `devices` and `notification_queue`, `invites/{code}`, `couples/{id}` with
/// its `daily_question/{date}`, their `answers/{uid}` and those's `releaseKeys/{recipient}`).
/// What Convoy does not model of Closer's Firestore (threads, games, billing) is not here.
final class CloserStore: Sendable {
    struct User: Sendable {
        var id: String
        var email: String?
        var passwordHash: String?
        var coupleId: String?
        var hasPremium = false
        /// What the owner wrote to `users/{uid}` (Firestore's typed values, as sent).
        var fields: [String: FirestoreValue] = [:]
        /// `users/{uid}/devices/{deviceId}`: each device's typed fields (`publicKey`, `platform`).
        var devices: [String: [String: FirestoreValue]] = [:]
        /// `users/{uid}/fcmTokens/{id}`: the registration tokens of the user's devices (`token`), owner-written.
        var fcmTokens: [String: [String: FirestoreValue]] = [:]
        /// `users/{uid}/notification_queue`: what the scheduled functions queued for the user (server-only), newest last.
        var notifications: [[String: FirestoreValue]] = []
        var createdAt: Date
    }

    /// `couples/{id}/daily_question/{date}`, with its answers and their release keys.
    struct DailyQuestion: Sendable {
        var questionId: String
        var date: String
        var assignedAt: Date
        var expiresAt: Date
        /// `answers/{uid}`: each partner's answer as written (and its reveal metadata as updated).
        var answers: [String: [String: FirestoreValue]] = [:]
        /// `answers/{uid}/releaseKeys/{recipient}`: keyed by answer owner, then recipient.
        var releaseKeys: [String: [String: [String: FirestoreValue]]] = [:]
    }

    struct Invite: Sendable {
        var code: String
        var inviter: String
        var status: String  // pending, accepted, expired
        var createdAt: Date
        var expiresAt: Date
        var wrappedCoupleKey: String?
        var kdfSalt: String?
        var kdfParams: String?
        var recoveryPhrase: String?
    }

    struct Couple: Sendable {
        var id: String
        var userIds: [String]
        var inviteCode: String
        var createdAt: Date
        var streakCount = 0
        var lastAnsweredAt: Date?
        var encryptionVersion: Int
        var wrappedCoupleKey: String?
        var kdfSalt: String?
        var kdfParams: String?
        /// Fields a weakened server let members write (`client-couple-writes`).
        var clientFields: [String: FirestoreValue] = [:]
        /// `daily_question/{date}` by date; the couple's latest assignment is `currentQuestionId`.
        var questions: [String: DailyQuestion] = [:]
        var currentQuestionId: String?
        /// Which of the 30/60/90-day outcome reminders `scheduledOutcomesReminder` has queued.
        var outcomesReminded: Set<Int> = []
    }

    struct State: Sendable {
        var users: [String: User] = [:]
        var emails: [String: String] = [:]
        /// SHA-256 of each refresh token → its user.
        var refresh: [String: String] = [:]
        /// Each user's refresh tokens, oldest first (`refreshTokensKept` at most).
        var refreshOf: [String: [String]] = [:]
        /// Each user's live invite codes, oldest first.
        var liveInvites: [String: [String]] = [:]
        var invites: [String: Invite] = [:]
        var couples: [String: Couple] = [:]
    }

    let state = Mutex(State())

    /// Refresh tokens a user keeps (its last sign-ins' on as many devices); older ones are revoked.
    static let refreshTokensKept = 5
    /// Live invites a user keeps; a new one past them replaces the oldest.
    static let liveInvitesKept = 3
    /// Daily questions a couple keeps (its latest days'); older ones go, so a long run's memory stays bounded.
    static let questionsKept = 7
    /// Queued notifications a user keeps.
    static let notificationsKept = 20

    func with<T>(_ body: (inout State) throws -> T) rethrows -> T { try state.withLock { try body(&$0) } }

    /// Firestore's auto-ids: 20 characters of A–Z, a–z, 0–9.
    static func autoID() -> String {
        let symbols = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var g = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in symbols.randomElement(using: &g)! })
    }

    /// Firebase Auth's uids: 28 characters of the same.
    static func uid() -> String {
        let symbols = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var g = SystemRandomNumberGenerator()
        return String((0..<28).map { _ in symbols.randomElement(using: &g)! })
    }
}

/// A Firestore value as the REST API writes it (`{"stringValue": "…"}`, `{"integerValue": "3"}`, …), kept as
/// the client sent it so it goes back out as it came in.
struct FirestoreValue: Sendable, Equatable {
    let value: JSONValue

    static func string(_ s: String) -> FirestoreValue { .init(value: ["stringValue": .string(s)]) }
    static func integer(_ n: Int) -> FirestoreValue { .init(value: ["integerValue": .string(String(n))]) }
    static func bool(_ b: Bool) -> FirestoreValue { .init(value: ["booleanValue": .bool(b)]) }
    static let null = FirestoreValue(value: ["nullValue": .null])
    static func timestamp(_ d: Date) -> FirestoreValue {
        .init(value: ["timestampValue": .string(d.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))])
    }
    static func strings(_ list: [String]) -> FirestoreValue {
        .init(value: ["arrayValue": ["values": .array(list.map { ["stringValue": .string($0)] })]])
    }
    static func optional(_ s: String?) -> FirestoreValue { s.map(string) ?? null }

    static let kinds: Set<String> = ["stringValue", "integerValue", "doubleValue", "booleanValue", "nullValue", "timestampValue",
                                     "arrayValue", "mapValue", "bytesValue"]

    /// One of Firestore's value kinds, or nil: what a client may write.
    static func validated(_ value: JSONValue) -> FirestoreValue? {
        guard case .object(let members) = value, members.count == 1, kinds.contains(members[0].key) else { return nil }
        return FirestoreValue(value: value)
    }
}
