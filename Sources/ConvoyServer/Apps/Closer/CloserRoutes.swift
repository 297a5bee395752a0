import ConvoyJSON
import ConvoySodium
import ConvoyTime
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// What Closer's handlers are told by the configuration.
struct CloserSettings: Sendable {
    var passwordHash: PasswordHash
    var bodyLimit: Int
    /// An invite's lifetime (the manual's 24 h unless `--invite-ttl`).
    var inviteTTL: Double
    /// How often each couple gets a new daily question (the manual's day, or a load test's shorter one), seconds.
    var questionEvery: Double = 86_400
    /// How long a day of a couple's age lasts for the 30/60/90-day outcome reminders (a day, or a load test's shorter one).
    var outcomeDay: Double = 86_400
    /// When the server started: a compressed day counts from it.
    var started = Date()
    var weaknesses: Set<CloserWeakness> = []

    func weak(_ w: CloserWeakness) -> Bool { weaknesses.contains(w) }
}

/// Closer's server side as the manual describes it (closer-engineering-manual.md, "Authentication and pairing
/// flow", "Firestore security rules"): Firebase Auth's REST API (Identity Toolkit's `accounts:signUp` and
/// `accounts:signInWithPassword`, Secure Token's refresh), the two callables of pairing over Firebase's
/// callable protocol (`POST /createInviteCallable`, `POST /acceptInviteCallable` with `{"data": …}`, answering
/// `{"result": …}` or `{"error": {"status", "message"}}`), and Firestore's REST documents for what pairing
/// touches, under the manual's rules.
struct CloserRoutes: Sendable {
    let store: CloserStore
    let tokens: CloserTokens
    /// The accept limit (`accept_invite`: 10 per caller per rolling hour), the create limit (`create_invite`, the
    /// same: a taken code answers ALREADY_EXISTS, so creating is guessing too) and, with hosted defaults, Firebase
    /// Auth's sign-up quota (`sign_ups`: 100 per address per hour); none with `--rate-limits off`.
    let limiter: RateLimiter
    let clock: any ConvoyClock
    let settings: CloserSettings
    let dummyHash: String
    /// The phones' held `Listen` connections (`CloserListeners`).
    let listeners = CloserListeners()
    /// FCM: the devices' connections, and what the functions send them (`CloserMessaging`).
    let messaging = CloserMessaging()
    /// Document GETs answered (what listeners spare the backend shows here).
    let documentGets = Counter()

    final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func add() { value.add(1, ordering: .relaxed) }
        var count: Int { value.load(ordering: .relaxed) }
    }

    /// The rules' `isValidInviteCode`: `^[a-zA-Z0-9]{6}$`.
    static func isCode(_ s: String) -> Bool {
        s.utf8.count == 6 && s.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    func add(to router: Router<ClientRequestContext>) {
        router.post("/identitytoolkit.googleapis.com/v1/:action") { request, context in
            switch context.parameters.get("action") ?? "" {
            case "accounts:signUp":
                try limit(CloserServer.signUpQuota.name, key: "ip:" + context.clientAddress, service: .identityToolkit)
                return try await signUp(request)
            case "accounts:signInWithPassword": return try await signIn(request)
            default: throw CloserError(code: "NOT_FOUND", message: "Unknown Identity Toolkit method", service: .identityToolkit)
            }
        }
        router.post("/securetoken.googleapis.com/v1/token") { request, _ in try await refresh(request) }
        router.post("/createInviteCallable") { request, _ in try await createInvite(request) }
        router.post("/acceptInviteCallable") { request, _ in try await acceptInvite(request) }
        router.post("/assignDailyQuestionCallable") { request, _ in try await assignDailyQuestion(request) }
        let documents: RouterPath = "/v1/projects/:project/databases/:database/documents/**"
        router.get(documents) { request, context in try await document(request, context, method: .get) }
        router.patch(documents) { request, context in try await document(request, context, method: .patch) }
        router.delete(documents) { request, context in try await document(request, context, method: .delete) }
    }

    /// Counts a request against the rule named `name`, if the server has it; over it, refused.
    func limit(_ name: String, key: String, service: CloserError.Service = .callable) throws {
        guard let rule = limiter.limits.rules.first(where: { $0.name == name }), let (_, wait) = limiter.admit([(rule, key)]) else { return }
        var e = CloserError.exhausted(after: wait)
        if service == .identityToolkit { e = CloserError(code: "RESOURCE_EXHAUSTED", message: "TOO_MANY_ATTEMPTS_TRY_LATER",
                                                         retryAfter: e.retryAfter, service: .identityToolkit) }
        throw e
    }

    // MARK: Firebase Auth

    func signUp(_ request: Request) async throws -> Response {
        let body = try await json(request)
        let now = clock.date
        guard let email = body["email"]?.string?.lowercased(), !email.isEmpty else {
            // No email: an anonymous account, as the trial onboarding makes.
            let uid = CloserStore.uid()
            store.with { $0.users[uid] = .init(id: uid, createdAt: now) }
            return try await session(uid: uid, email: nil)
        }
        guard email.contains("@"), email.count <= 254 else { throw CloserError.auth("INVALID_EMAIL") }
        guard let password = body["password"]?.string, password.count >= 6 else {
            throw CloserError.auth("WEAK_PASSWORD : Password should be at least 6 characters")
        }
        let (cost, pw) = (settings.passwordHash, password)
        let hash = try await AuthService.hashing { try cost.hash(pw) }
        let uid = CloserStore.uid()
        let taken: Bool = store.with { s in
            guard s.emails[email] == nil else { return true }
            s.emails[email] = uid
            s.users[uid] = .init(id: uid, email: email, passwordHash: hash, createdAt: now)
            return false
        }
        if taken { throw CloserError.auth("EMAIL_EXISTS") }
        return try await session(uid: uid, email: email)
    }

    func signIn(_ request: Request) async throws -> Response {
        let body = try await json(request)
        let email = (body["email"]?.string ?? "").lowercased(), password = body["password"]?.string ?? ""
        let found = store.with { s in s.emails[email].flatMap { s.users[$0] } }
        // The same Argon2id work whether the account exists or not; one answer for both (email enumeration protection).
        let encoded = found?.passwordHash ?? dummyHash
        let ok = try await AuthService.hashing { PasswordHash.verify(password, against: encoded) }
        guard ok, let user = found, user.passwordHash != nil else { throw CloserError.auth("INVALID_LOGIN_CREDENTIALS") }
        return try await session(uid: user.id, email: user.email)
    }

    func refresh(_ request: Request) async throws -> Response {
        var fields: [String: String] = [:]
        let buffer = try await request.body.collect(upTo: settings.bodyLimit)
        let text = String(buffer: buffer)
        if let o = JSONScanner.parse(text), case .object(let members) = o {
            for m in members { if let s = m.value.string { fields[m.key] = s } }
        } else {
            for pair in text.split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                if kv.count == 2 { fields[kv[0]] = kv[1] }
            }
        }
        guard fields["grant_type"] == "refresh_token", let token = fields["refresh_token"] else {
            throw CloserError.auth("INVALID_GRANT_TYPE")
        }
        let hash = SHA256Digest.hex(Array(token.utf8))
        guard let uid = store.with({ $0.refresh[hash] }) else { throw CloserError.auth("INVALID_REFRESH_TOKEN") }
        let id = try await tokens.idToken(uid: uid)
        return Self.json(.ok, ["access_token": .string(id), "expires_in": .string(String(Int(tokens.ttl))), "id_token": .string(id),
                               "project_id": .string(tokens.project), "refresh_token": .string(token), "token_type": "Bearer",
                               "user_id": .string(uid)])
    }

    func session(uid: String, email: String?) async throws -> Response {
        let (refresh, hash) = CloserTokens.refreshToken()
        store.with { s in
            s.refresh[hash] = uid
            // A user's last few sign-ins keep their refresh tokens; older ones are revoked (memory stays bounded).
            s.refreshOf[uid, default: []].append(hash)
            while s.refreshOf[uid]!.count > CloserStore.refreshTokensKept { s.refresh[s.refreshOf[uid]!.removeFirst()] = nil }
        }
        var out: [String: JSONValue] = ["kind": "identitytoolkit#SignupNewUserResponse", "idToken": .string(try await tokens.idToken(uid: uid)),
                                        "refreshToken": .string(refresh), "expiresIn": .string(String(Int(tokens.ttl))), "localId": .string(uid)]
        if let email { out["email"] = .string(email) }
        return Self.json(.ok, JSONValue(out))
    }

    // MARK: Callables

    /// The caller's uid from `Authorization: Bearer <ID token>`.
    func caller(_ request: Request) async throws -> String {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else { throw CloserError.unauthenticated }
        let token = String(header.dropFirst(7))
        let verified = settings.weak(.unverifiedTokens) ? CloserTokens.unverifiedSubject(token) : await tokens.verify(token)
        guard let uid = verified, store.with({ $0.users[uid] != nil }) else { throw CloserError.unauthenticated }
        return uid
    }

    /// A callable's `data`.
    func callData(_ request: Request) async throws -> JSONValue {
        let body = try await json(request)
        guard let data = body["data"], case .object = data else { throw CloserError.invalid("Request body must be {\"data\": {…}}.") }
        return data
    }

    func createInvite(_ request: Request) async throws -> Response {
        let uid = try await caller(request)
        try limit("create_invite", key: "user:" + uid)
        let data = try await callData(request)
        guard let code = data["code"]?.string, Self.isCode(code) else {
            throw CloserError.invalid("The invite code must be 6 letters or digits.")
        }
        func text(_ key: String) throws -> String? {
            guard let v = data[key] else { return nil }
            guard let s = v.string, s.utf8.count <= 4096 else { throw CloserError.invalid("\(key) must be text of at most 4096 bytes.") }
            return s
        }
        let now = clock.date
        let invite = CloserStore.Invite(code: code, inviter: uid, status: "pending", createdAt: now, expiresAt: now.addingTimeInterval(settings.inviteTTL),
                                        wrappedCoupleKey: try text("wrappedKey"), kdfSalt: try text("salt"), kdfParams: try text("params"),
                                        recoveryPhrase: try text("encryptedPhrase"))
        try store.with { s in
            guard s.users[uid]?.coupleId == nil else { throw CloserError.precondition("You are already in a couple.") }
            // The invite document exists until Firestore's TTL deletes it, used or not: its code is taken till then.
            if let old = s.invites[code], old.expiresAt > now {
                throw CloserError(code: "ALREADY_EXISTS", message: "That code is taken; try another.")
            }
            // A few live invites a user (memory stays bounded): a new one past them replaces the oldest.
            var live = (s.liveInvites[uid] ?? []).filter { s.invites[$0]?.status == "pending" && s.invites[$0]?.inviter == uid }
            while live.count >= CloserStore.liveInvitesKept { s.invites[live.removeFirst()] = nil }
            s.liveInvites[uid] = live + [code]
            s.invites[code] = invite
        }
        return Self.json(.ok, ["result": ["code": .string(code),
                                          "expiresAt": .string(invite.expiresAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))]])
    }

    func acceptInvite(_ request: Request) async throws -> Response {
        let uid = try await caller(request)
        // Every attempt counts, before anything is looked at (users/{uid}/invite_attempts in the manual).
        if !settings.weak(.noAcceptLimit) { try limit(CloserServer.acceptLimit.name, key: "user:" + uid) }
        let data = try await callData(request)
        guard let code = data["code"]?.string, Self.isCode(code) else {
            throw CloserError.invalid("The invite code must be 6 letters or digits.")
        }
        let now = clock.date
        let (couple, invite): (CloserStore.Couple, CloserStore.Invite) = try store.with { s in
            // Before the code is looked at: a caller in a couple learns nothing of which codes are live.
            guard s.users[uid]?.coupleId == nil else { throw CloserError.precondition("You are already in a couple.") }
            guard var invite = s.invites[code] else { throw CloserError.inviteNotFound }
            if invite.status == "accepted" {
                throw settings.weak(.revealUsed) ? CloserError.precondition("This invite was already used.") : CloserError.inviteNotFound
            }
            if invite.expiresAt <= now, !settings.weak(.acceptExpired) {
                invite.status = "expired"
                s.invites[code] = invite
                throw settings.weak(.revealUsed) ? CloserError.precondition("This invite has expired.") : CloserError.inviteNotFound
            }
            guard invite.inviter != uid else { throw CloserError.invalid("You cannot accept your own invite.") }
            guard s.users[invite.inviter]?.coupleId == nil else { throw CloserError.inviteNotFound }
            let couple = CloserStore.Couple(id: CloserStore.autoID(), userIds: [invite.inviter, uid], inviteCode: code, createdAt: now,
                                            // The manual's v2 (strict) only with all of the key material; else plaintext.
                                            encryptionVersion: invite.wrappedCoupleKey != nil && invite.kdfSalt != nil && invite.kdfParams != nil ? 2 : 0,
                                            wrappedCoupleKey: invite.wrappedCoupleKey, kdfSalt: invite.kdfSalt, kdfParams: invite.kdfParams)
            let handed = invite
            invite.status = "accepted"
            invite.recoveryPhrase = nil  // handed to the acceptor once, then wiped from the invite
            s.invites[code] = invite
            s.couples[couple.id] = couple
            s.users[invite.inviter]?.coupleId = couple.id
            s.users[uid]?.coupleId = couple.id
            return (couple, handed)
        }
        wrote(["users/\(invite.inviter)", "users/\(uid)", "couples/\(couple.id)"])
        let result: JSONValue = ["coupleId": .string(couple.id), "encryptedRecoveryPhrase": JSONValue(invite.recoveryPhrase),
                                 "kdfParams": JSONValue(invite.kdfParams), "kdfSalt": JSONValue(invite.kdfSalt),
                                 "partnerId": .string(invite.inviter), "wrappedCoupleKey": JSONValue(invite.wrappedCoupleKey)]
        return Self.json(.ok, ["result": result])
    }

    // MARK: Bodies

    func json(_ request: Request) async throws -> JSONValue {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > settings.bodyLimit {
            throw CloserError(code: "INVALID_ARGUMENT", message: "Request body larger than \(settings.bodyLimit) bytes.")
        }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: settings.bodyLimit) } catch {
            throw CloserError(code: "INVALID_ARGUMENT", message: "Request body larger than \(settings.bodyLimit) bytes.")
        }
        guard let o = BodyJSON.parse(buffer.readableBytesView), case .object = o else {
            throw CloserError.invalid("Request body is not a JSON object.")
        }
        return o
    }

    static func json(_ status: HTTPResponse.Status, _ value: JSONValue) -> Response {
        Response(status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: value.text)))
    }
}
