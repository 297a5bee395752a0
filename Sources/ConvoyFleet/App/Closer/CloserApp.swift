import ConvoyCrypto
import ConvoyFormats
import ConvoyJSON
import ConvoySodium
import ConvoyWire
import Foundation
import Synchronization

/// Closer (closer-engineering-manual.md): a couples app, paired by a 6-character code over server-mediated
/// callables. A phone signs up with Firebase Auth, publishes its P-256 device key (`users/{uid}/devices/primary`),
/// and pairs: the inviter makes a code and calls `createInviteCallable` with its wrapped couple key; the code
/// reaches the partner out of band (read off the inviter's screen, or a text); the partner calls
/// `acceptInviteCallable`, which makes the couple and returns the wrapped key; the inviter learns it from its
/// own `users/{uid}` document (`coupleId`), as a Firestore listener would. The couple key is made, wrapped and
/// unwrapped as the manual's Android phones do it (`CloserCoupleKey`: Argon2id at m=46080 KiB, t=3, p=1). Paired, each
/// phone answers the daily question with a sealed answer and reveals its partner's (CloserApp+Questions.swift). What
/// Convoy does not model of Closer — threads, games, FCM, RevenueCat — the phone does not do (docs/scenarios.md, "Closer").
public struct CloserApp: MailboxApp, RegisteredApp {
    static let appName = "closer"
    static func make(_ options: AppOptions) -> CloserApp {
        CloserApp(outcomeDay: options["outcome_day"].flatMap(Double.init) ?? 86_400, reminderEvery: options["reminder_every"].flatMap(Double.init) ?? 60)
    }

    public let name = "closer"
    /// What passes between the phones outside the backend (codes, as people pass them), and what the run
    /// has seen of couples: one per run, shared by its phones.
    let ledger: CloserLedger
    /// What each phone keeps on itself: its device key, today's question, its answers' one-time keys, what it revealed.
    let phones = CloserPhones()

    /// The outcome reminders the backend owes the run's couples, and those the phones received.
    let reminders: CloserReminders

    /// `outcomeDay`: how long a day of a couple's age lasts for its reminders; `reminderEvery`: how often the backend's
    /// scan runs (both as the backend is told them: `social.outcome_day`, `social.reminder_every`).
    public init(outcomeDay: Double = 86_400, reminderEvery: Double = 60) {
        ledger = CloserLedger()
        reminders = CloserReminders(outcomeDay: outcomeDay, reminderEvery: reminderEvery)
    }

    static let modes: [(option: String, values: [String])] = []
    /// The project id `convoy serve --app closer` names its documents with.
    public static let project = "closer-convoy"
    /// The rules' `isValidInviteCode` alphabet.
    public static let codeAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

    func client(_ http: SupabaseHTTP) -> FirebaseClient { FirebaseClient(http, project: Self.project) }

    // MARK: Accounts

    public func signUp(email: String, password: String, keys: BoxKeyPair, adminKey: String?,
                       via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        let session = try await client(http).signUp(email: email, password: password)
        try await publishDeviceKey(session, via: http)
        return session
    }

    public func signIn(email: String, password: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        try await client(http).signIn(email: email, password: password)
    }

    public func refresh(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        try await client(http).refresh(session)
    }

    /// Firebase signs out on the phone alone.
    public func signOut(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {}

    /// The device's P-256 key as `UserKeyManager.kt` makes it (a fresh key pair; the private key stays on the phone),
    /// its public point published as `pub:v1:` at `users/{uid}/devices/primary`, readable by its owner and partner only.
    func publishDeviceKey(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        let keys = phones.deviceKey(of: session.userID)
        try await client(http).write("users/\(session.userID)/devices/primary",
                                     fields: ["publicKey": ["stringValue": .string(CloserAnswer.publicKeyText(keys.publicPoint))],
                                              "platform": ["stringValue": "android"],
                                              "updatedAt": ["timestampValue": .string(Date().formatted(.iso8601))]],
                                     token: session.accessToken)
    }

    /// Closer's device key is P-256, not the X25519 key Convoy hands every phone: this publishes the phone's own.
    public func finishSignUp(keys: BoxKeyPair, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        try await publishDeviceKey(session, via: http)
    }

    public func hasPublishedKey(_ userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool {
        (try? await client(http).document("users/\(userID)/devices/primary", token: token))
            .map { FirebaseClient.string($0, "publicKey").flatMap(CloserAnswer.point) != nil } ?? false
    }

    /// Closer has no X25519 keys; its partners' P-256 keys come from `friendKeys`.
    public func publicKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: PublicKey] {
        [:]
    }

    /// Each partner's P-256 point from `users/{id}/devices/primary` (its partner alone may read it).
    public func friendKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: FriendKeys] {
        var out: [String: FriendKeys] = [:]
        for id in userIDs {
            let fields = try await client(http).document("users/\(id)/devices/primary", token: token)
            guard let point = FirebaseClient.string(fields, "publicKey").flatMap(CloserAnswer.point) else {
                throw SupabaseError(kind: .unexpectedResponse, message: "users/\(id)/devices/primary has no pub:v1: P-256 key")
            }
            out[id] = FriendKeys(device: point)
        }
        return out
    }

    // MARK: Pairing

    /// A fresh code from the rules' alphabet.
    static func newCode() -> String {
        var g = SystemRandomNumberGenerator()
        return String((0..<6).map { _ in codeAlphabet.randomElement(using: &g)! })
    }

    /// `createInviteCallable` with a new code (another if the code is taken) and key material as an Android
    /// inviter makes it (`CloserCoupleKey`): the couple key wrapped with Argon2id at the manual's limits, its salt
    /// and KDF parameters, the recovery phrase sealed with the code.
    func createInvite(token: String, prepared: (code: String, key: CloserCoupleKey)? = nil, via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        var last: SupabaseError?
        var prepared = prepared
        for _ in 0..<3 {
            let code: String, couple: CloserCoupleKey
            if let p = prepared {
                (code, couple) = p
                prepared = nil
            } else {
                code = Self.newCode()
                do { couple = try await CloserCoupleKey.makeOffPool(code: code) } catch {
                    throw SupabaseError(kind: .unexpectedResponse, message: "cannot make the couple key: \(error)")
                }
            }
            do {
                _ = try await client(http).call("createInviteCallable", ["code": .string(code), "wrappedKey": .string(couple.wrappedKey),
                                                                        "salt": .string(couple.salt), "params": .string(CloserCoupleKey.kdfParams),
                                                                        "encryptedPhrase": .string(couple.encryptedPhrase)],
                                                token: token)
                ledger.keyed(code, couple.key)
                return code
            } catch {
                guard case .http(409, _) = error.kind else { throw error }
                last = error
            }
        }
        throw last!
    }

    /// `acceptInviteCallable`, then the couple key unwrapped as an Android acceptor does (the phrase opened with the
    /// code, Argon2id at the returned parameters): it must be the inviter's. The couple's id.
    @discardableResult
    func acceptInvite(_ code: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        let result = try await client(http).call("acceptInviteCallable", ["code": .string(code)], token: token)
        guard let couple = result["coupleId"]?.string, let wrapped = result["wrappedCoupleKey"]?.string,
              let salt = result["kdfSalt"]?.string, let params = result["kdfParams"]?.string,
              let phrase = result["encryptedRecoveryPhrase"]?.string else {
            throw SupabaseError(kind: .unexpectedResponse, message: "acceptInviteCallable: no couple, or no wrapped key, salt, parameters or phrase in the result")
        }
        let key: [UInt8]
        do { key = try await CloserCoupleKey.unwrapOffPool(wrappedKey: wrapped, salt: salt, params: params, encryptedPhrase: phrase, code: code) } catch {
            throw SupabaseError(kind: .unexpectedResponse, message: "acceptInviteCallable: the couple key does not unwrap: \(error)")
        }
        // The code guessed or passed on by someone the run did not give it to (a probe's) has no key to compare with.
        if let made = ledger.key(of: code), made != key {
            throw SupabaseError(kind: .unexpectedResponse, message: "acceptInviteCallable: the unwrapped couple key is not the inviter's")
        }
        return couple
    }

    /// Set-up pairing (and the probe cast): the inviter makes a code, the invitee accepts it (unless left pending).
    public func befriend(_ request: FriendRequest, via http: SupabaseHTTP) async throws(SupabaseError) {
        let code = try await createInvite(token: request.inviter.accessToken, via: http)
        ledger.made(code, by: request.inviter.userID)
        if request.pending { return }
        let couple = try await acceptInvite(code, token: request.invitee.accessToken, via: http)
        ledger.paired(request.inviter.userID, request.invitee.userID, couple: couple)
    }

    public func activeFriendships(token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        guard let uid = Self.subject(token) else { return 0 }
        return FirebaseClient.string(try await client(http).document("users/\(uid)", token: token), "coupleId") == nil ? 0 : 1
    }

    public var pairsDuringRun: Bool { true }

    /// Couples: a phone has one partner, so a hostile device's victim is in another couple (docs/probes.md).
    public var friendsAreCouples: Bool { true }

    /// Its 6-character pairing codes expire (24 h in the manual).
    public var issuesInviteCodes: Bool { true }

    /// Before the invite: its code and couple key, made on the phone (Argon2id), so that `pairing_request` is the call.
    public func prepareRequest(_ invitee: Invitee, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool {
        guard let me = Self.subject(token) else { return false }
        let code = Self.newCode()
        do { ledger.prepare(for: me, code: code, key: try await CloserCoupleKey.makeOffPool(code: code)) } catch {
            throw SupabaseError(kind: .unexpectedResponse, message: "cannot make the couple key: \(error)")
        }
        return false
    }

    /// The inviter makes the invite and shows the code; the run hands it to the partner (`pendingRequests`).
    public func requestFriendship(to invitee: Invitee, preference: String, from session: Session,
                                  via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        let code = try await createInvite(token: session.accessToken, prepared: ledger.prepared(for: session.userID), via: http)
        ledger.made(code, by: session.userID)
        ledger.text(code, from: session.userID, to: invitee.userID)
        return code
    }

    public func acceptFriendship(_ code: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        let couple = try await acceptInvite(code, token: token, via: http)
        if let me = Self.subject(token), let inviter = ledger.inviter(of: code) { ledger.paired(inviter, me, couple: couple) }
    }

    /// The codes passed to this phone's user since it last looked: what its user read off a screen or a text.
    public func pendingRequests(to userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] {
        ledger.take(for: userID).map { .requested(id: $0.code, from: $0.from) }
    }

    /// The inviter's own document, as its listener sees it: paired once `coupleId` is set; the partner from the couple.
    public func acceptedRequests(by userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] {
        let c = ListenedReads(client: client(http), listener: phones.listener(of: userID))
        guard let couple = FirebaseClient.string(try await c.document("users/\(userID)", token: token), "coupleId") else { return [] }
        let partners = FirebaseClient.strings(try await c.document("couples/\(couple)", token: token), "userIds").filter { $0 != userID }
        return partners.map { .accepted(id: "", by: $0) }
    }

    /// The uid in an ID token (the phone's own; not verified here).
    static func subject(_ token: String) -> String? { UnverifiedJWT.claims(token)?["sub"]?.string }

}

/// What passes between a run's Closer phones outside the backend, and what the run learnt of couples.
final class CloserLedger: Sendable {
    private struct State {
        /// Codes texted to each user, not yet read.
        var inbox: [String: [(code: String, from: String)]] = [:]
        /// Each code's inviter, and each inviter's latest code.
        var inviterOf: [String: String] = [:]
        var latest: [String: String] = [:]
        var couple: [String: String] = [:]
        /// Each code's couple key as its inviter made it, for the acceptor's to be checked against.
        var keys: [String: [UInt8]] = [:]
        var prepared: [String: (code: String, key: CloserCoupleKey)] = [:]
    }
    private let state = Mutex(State())

    func keyed(_ code: String, _ key: [UInt8]) { state.withLock { $0.keys[code] = key } }

    /// An invite's code and couple key made ahead (`prepareRequest`), taken once by the invite.
    func prepare(for user: String, code: String, key: CloserCoupleKey) { state.withLock { $0.prepared[user] = (code, key) } }
    func prepared(for user: String) -> (code: String, key: CloserCoupleKey)? { state.withLock { $0.prepared.removeValue(forKey: user) } }
    func key(of code: String) -> [UInt8]? { state.withLock { $0.keys[code] } }

    func made(_ code: String, by inviter: String) {
        state.withLock { s in
            s.inviterOf[code] = inviter
            s.latest[inviter] = code
        }
    }

    func text(_ code: String, from inviter: String, to invitee: String) {
        state.withLock { $0.inbox[invitee, default: []].append((code, inviter)) }
    }

    func take(for user: String) -> [(code: String, from: String)] {
        state.withLock { $0.inbox.removeValue(forKey: user) ?? [] }
    }

    func inviter(of code: String) -> String? { state.withLock { $0.inviterOf[code] } }
    func latestCode(of user: String) -> String? { state.withLock { $0.latest[user] } }
    func couple(of user: String) -> String? { state.withLock { $0.couple[user] } }

    func paired(_ a: String, _ b: String, couple: String) {
        state.withLock { s in
            s.couple[a] = couple
            s.couple[b] = couple
        }
    }
}
