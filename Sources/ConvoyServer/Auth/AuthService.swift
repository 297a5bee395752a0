import ConvoyJSON
import ConvoySodium
import ConvoyTime
import Foundation
import HTTPTypes
import NIOPosix

/// GoTrue's subset that Supabase clients use: email and anonymous sign-up
/// (auto-confirmed), password and refresh-token grants with rotation, logout,
/// the current user, and admin creation with the service role.
struct AuthService: Sendable {
    let store: any AuthStore
    let tokens: TokenService
    let clock: any ConvoyClock
    let passwordHash: PasswordHash
    /// An Argon2id hash, at the configured cost, of nothing anyone knows.
    let dummyHash: String

    init(store: any AuthStore, tokens: TokenService, clock: any ConvoyClock, passwordHash: PasswordHash) {
        self.store = store
        self.tokens = tokens
        self.clock = clock
        self.passwordHash = passwordHash
        dummyHash = (try? passwordHash.hash(UUID().uuidString)) ?? ""
    }

    /// GoTrue's minimum password length.
    static let minimumPasswordLength = 6

    func signUp(email rawEmail: String?, password: String?) async throws -> JSONValue {
        let userID = UUID().uuidString.lowercased()
        guard let rawEmail, !rawEmail.isEmpty else {
            // No email: an anonymous user, as `supabase.auth.signInAnonymously()` makes.
            _ = try await store.insertUser(id: userID, email: nil, passwordHash: nil, now: clock.date)
            return try await newSession(userID: userID)
        }
        let email = rawEmail.lowercased()
        guard Self.looksLikeEmail(email) else {
            throw APIError.gotrue(.badRequest, "validation_failed", "Unable to validate email address: invalid format")
        }
        guard let password, password.count >= Self.minimumPasswordLength else {
            throw APIError.gotrue(.unprocessableContent, "weak_password",
                                  "Password should be at least \(Self.minimumPasswordLength) characters.")
        }
        let hash = try await Self.hashing { try passwordHash.hash(password) }
        guard try await store.insertUser(id: userID, email: email, passwordHash: hash, now: clock.date) else {
            throw APIError.gotrue(.unprocessableContent, "user_already_exists", "User already registered")
        }
        return try await newSession(userID: userID)
    }

    func signIn(email rawEmail: String, password: String) async throws -> JSONValue {
        let row = try await store.credentials(email: rawEmail.lowercased())
        // Verify against a dummy hash of the same cost when the user is unknown,
        // so both cases cost the same.
        let stored = row?.hash ?? dummyHash
        guard try await Self.hashing({ PasswordHash.verify(password, against: stored) }), let id = row?.id else {
            throw APIError.gotrue(.badRequest, "invalid_credentials", "Invalid login credentials")
        }
        return try await newSession(userID: id)
    }

    /// GoTrue's `security_refresh_token_reuse_interval`: a token used again within
    /// this many seconds of its rotation (a retried request) gets the same successor.
    static let reuseInterval = 10.0

    /// Rotates a refresh token. Reused within `reuseInterval`, it answers with its
    /// successor; reused later, it revokes its whole session (reuse detection),
    /// so a stolen token is worth one refresh.
    func refresh(token: String) async throws -> JSONValue {
        let now = clock.date
        switch try await store.rotate(token: token, fresh: Self.randomToken(), now: now,
                                      graceCutoff: now.addingTimeInterval(-Self.reuseInterval)) {
        case .rotated(let userID, let sessionID, let next):
            return try await session(userID: userID, sessionID: sessionID, refreshToken: next)
        case .reused:
            throw APIError.gotrue(.badRequest, "refresh_token_already_used", "Invalid Refresh Token: Already Used")
        case .notFound:
            throw APIError.gotrue(.badRequest, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
        }
    }

    /// `scope=global` (the default) ends every session of the user; `local` only this one.
    func logout(_ principal: Principal, scope: String?) async throws {
        guard let userID = principal.userID else { return }
        try await store.revokeSessions(userID: userID, sessionID: scope == "local" ? principal.sessionID : nil)
    }

    /// Whether a session is still live (an access token outlives a logout otherwise).
    func sessionIsLive(_ sessionID: String) async throws -> Bool {
        try await store.sessionIsLive(sessionID)
    }

    func user(id: String) async throws -> JSONValue {
        guard let user = try await store.authUser(id: id) else {
            throw APIError.gotrue(.notFound, "user_not_found", "User not found")
        }
        return Self.userJSON(user)
    }

    /// `POST /admin/users` with the service role: a confirmed user, no session.
    func adminCreate(email: String?, password: String?) async throws -> JSONValue {
        guard let email, !email.isEmpty else {
            throw APIError.gotrue(.badRequest, "validation_failed", "An email address is required")
        }
        let session = try await signUp(email: email, password: password)
        return session["user"] ?? [:]
    }

    // MARK: - Sessions

    private func newSession(userID: String) async throws -> JSONValue {
        let sessionID = UUID().uuidString.lowercased()
        let refresh = Self.randomToken()
        try await store.insertSession(id: sessionID, userID: userID, refreshToken: refresh, now: clock.date)
        return try await session(userID: userID, sessionID: sessionID, refreshToken: refresh)
    }

    private func session(userID: String, sessionID: String, refreshToken: String) async throws -> JSONValue {
        guard let user = try await store.authUser(id: userID) else {
            throw APIError.gotrue(.notFound, "user_not_found", "User not found")
        }
        let (token, expiresAt) = try await tokens.accessToken(userID: userID, email: user.email ?? "", sessionID: sessionID,
                                                              anonymous: user.isAnonymous)
        return ["access_token": .string(token), "token_type": "bearer", "expires_in": JSONValue(Int(tokens.ttl)),
                "expires_at": JSONValue(expiresAt), "refresh_token": .string(refreshToken), "user": Self.userJSON(user)]
    }

    /// GoTrue's user object.
    static func userJSON(_ u: AuthUser) -> JSONValue {
        let created = JSONValue.string(Timestamps.format(u.createdAt))
        let confirmed: JSONValue = u.isAnonymous ? .null : created
        return [
            "id": .string(u.id), "aud": "authenticated", "role": "authenticated",
            "email": .string(u.email ?? ""), "phone": "",
            "email_confirmed_at": confirmed, "confirmed_at": confirmed,
            "last_sign_in_at": JSONValue(u.lastSignInAt.map(Timestamps.format)),
            "app_metadata": ["provider": u.isAnonymous ? "anonymous" : "email", "providers": u.isAnonymous ? [] : ["email"]],
            "user_metadata": [:], "identities": [],
            "created_at": created, "updated_at": .string(Timestamps.format(u.updatedAt)), "is_anonymous": .bool(u.isAnonymous),
        ]
    }

    /// 32 random bytes, URL-safe Base64 without padding.
    static func randomToken() -> String {
        Data(Sodium.randomBytes(32)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func looksLikeEmail(_ s: String) -> Bool {
        let parts = s.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".") && !parts[1].hasPrefix(".")
            && !parts[1].hasSuffix(".") && s.count <= 254 && !s.contains(where: \.isWhitespace)
    }

    /// Argon2id is deliberately slow (`interactive`: ~64 MiB, tens of ms): it
    /// runs on NIO's thread pool for blocking work, not on Swift's few
    /// cooperative threads nor the event loops.
    static func hashing<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }
}
