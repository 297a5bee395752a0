import ConvoySodium
import Foundation
import GRDB
import HTTPTypes

/// GoTrue's subset that Green Box clients use: email and anonymous sign-up
/// (auto-confirmed), password and refresh-token grants with rotation, logout,
/// the current user, and admin creation with the service role.
struct AuthService: Sendable {
    let store: Store
    let tokens: TokenService
    let clock: any ServerClock
    let passwordHash: PasswordHash
    /// An Argon2id hash, at the configured cost, of nothing anyone knows.
    let dummyHash: String

    init(store: Store, tokens: TokenService, clock: any ServerClock, passwordHash: PasswordHash) {
        self.store = store
        self.tokens = tokens
        self.clock = clock
        self.passwordHash = passwordHash
        dummyHash = (try? passwordHash.hash(UUID().uuidString)) ?? ""
    }

    /// GoTrue's minimum password length.
    static let minimumPasswordLength = 6

    func signUp(email rawEmail: String?, password: String?) async throws -> [String: Any] {
        let now = Timestamps.format(clock.now())
        let userID = UUID().uuidString.lowercased()
        guard let rawEmail, !rawEmail.isEmpty else {
            // No email: an anonymous user, as `supabase.auth.signInAnonymously()` makes.
            try await store.pool.write { db in
                try db.execute(sql: "INSERT INTO auth_users (id, email, password_hash, is_anonymous, created_at, updated_at) VALUES (?, NULL, NULL, 1, ?, ?)",
                               arguments: [userID, now, now])
            }
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
        let hash = try await Self.offPool { try passwordHash.hash(password) }
        do {
            try await store.pool.write { db in
                try db.execute(sql: "INSERT INTO auth_users (id, email, password_hash, is_anonymous, created_at, updated_at) VALUES (?, ?, ?, 0, ?, ?)",
                               arguments: [userID, email, hash, now, now])
            }
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw APIError.gotrue(.unprocessableContent, "user_already_exists", "User already registered")
        }
        return try await newSession(userID: userID)
    }

    func signIn(email rawEmail: String, password: String) async throws -> [String: Any] {
        // Sendable values out of the read, so GRDB's async (non-blocking) overload runs.
        let row: (id: String, hash: String?)? = try await store.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT id, password_hash FROM auth_users WHERE email = ?", arguments: [rawEmail.lowercased()])
                .map { ($0["id"], $0["password_hash"]) }
        }
        // Verify against a dummy hash of the same cost when the user is unknown,
        // so both cases cost the same.
        let stored = row?.hash ?? dummyHash
        guard await Self.offPool({ PasswordHash.verify(password, against: stored) }), let id = row?.id else {
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
    func refresh(token: String) async throws -> [String: Any] {
        let nowDate = clock.now()
        let now = Timestamps.format(nowDate)
        let graceCutoff = Timestamps.format(nowDate.addingTimeInterval(-Self.reuseInterval))
        let fresh = Self.randomToken()
        enum Outcome { case rotated(String, String, String), reused, notFound }
        let outcome: Outcome = try await store.pool.write { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT t.user_id, t.session_id, t.revoked, s.revoked AS session_revoked
                FROM auth_refresh_tokens t JOIN auth_sessions s ON s.id = t.session_id WHERE t.token = ?
                """, arguments: [token]) else { return .notFound }
            let sessionID: String = row["session_id"], userID: String = row["user_id"]
            if (row["session_revoked"] as Int) != 0 { return .reused }
            if (row["revoked"] as Int) != 0 {
                if let child = try String.fetchOne(db, sql: """
                    SELECT token FROM auth_refresh_tokens WHERE parent = ? AND revoked = 0 AND created_at >= ?
                    """, arguments: [token, graceCutoff]) {
                    return .rotated(userID, sessionID, child)
                }
                try db.execute(sql: "UPDATE auth_sessions SET revoked = 1 WHERE id = ?", arguments: [sessionID])
                return .reused
            }
            try db.execute(sql: "UPDATE auth_refresh_tokens SET revoked = 1 WHERE token = ?", arguments: [token])
            try db.execute(sql: "INSERT INTO auth_refresh_tokens (token, session_id, user_id, created_at, parent) VALUES (?, ?, ?, ?, ?)",
                           arguments: [fresh, sessionID, userID, now, token])
            return .rotated(userID, sessionID, fresh)
        }
        switch outcome {
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
        try await store.pool.write { db in
            if scope == "local", let sid = principal.sessionID {
                try db.execute(sql: "UPDATE auth_sessions SET revoked = 1 WHERE id = ?", arguments: [sid])
            } else {
                try db.execute(sql: "UPDATE auth_sessions SET revoked = 1 WHERE user_id = ?", arguments: [userID])
            }
        }
    }

    /// Whether a session is still live (an access token outlives a logout otherwise).
    func sessionIsLive(_ sessionID: String) async throws -> Bool {
        try await store.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT revoked FROM auth_sessions WHERE id = ?", arguments: [sessionID]) == 0
        }
    }

    func user(id: String) async throws -> [String: Any] {
        guard let row: [String: DatabaseValue] = try await store.pool.read({ db in
            try Row.fetchOne(db, sql: "SELECT * FROM auth_users WHERE id = ?", arguments: [id])
                .map { r in Dictionary(uniqueKeysWithValues: r.columnNames.map { ($0, r[$0] as DatabaseValue) }) }
        }) else {
            throw APIError.gotrue(.notFound, "user_not_found", "User not found")
        }
        return Self.userJSON(row)
    }

    /// `POST /admin/users` with the service role: a confirmed user, no session.
    func adminCreate(email: String?, password: String?) async throws -> [String: Any] {
        guard let email, !email.isEmpty else {
            throw APIError.gotrue(.badRequest, "validation_failed", "An email address is required")
        }
        let session = try await signUp(email: email, password: password)
        return session["user"] as? [String: Any] ?? [:]
    }

    // MARK: - Sessions

    private func newSession(userID: String) async throws -> [String: Any] {
        let now = Timestamps.format(clock.now())
        let sessionID = UUID().uuidString.lowercased()
        let refresh = Self.randomToken()
        try await store.pool.write { db in
            try db.execute(sql: "INSERT INTO auth_sessions (id, user_id, created_at) VALUES (?, ?, ?)", arguments: [sessionID, userID, now])
            try db.execute(sql: "INSERT INTO auth_refresh_tokens (token, session_id, user_id, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [refresh, sessionID, userID, now])
            try db.execute(sql: "UPDATE auth_users SET last_sign_in_at = ? WHERE id = ?", arguments: [now, userID])
        }
        return try await session(userID: userID, sessionID: sessionID, refreshToken: refresh)
    }

    private func session(userID: String, sessionID: String, refreshToken: String) async throws -> [String: Any] {
        let user = try await user(id: userID)
        let email = user["email"] as? String
        let anonymous = user["is_anonymous"] as? Bool ?? false
        let (token, expiresAt) = try await tokens.accessToken(userID: userID, email: email, sessionID: sessionID, anonymous: anonymous)
        return ["access_token": token, "token_type": "bearer", "expires_in": Int(tokens.ttl), "expires_at": expiresAt,
                "refresh_token": refreshToken, "user": user]
    }

    static func userJSON(_ row: [String: DatabaseValue]) -> [String: Any] {
        func text(_ key: String) -> String? { row[key].flatMap(String.fromDatabaseValue) }
        let anonymous = row["is_anonymous"].flatMap(Int.fromDatabaseValue) != 0
        let created = text("created_at") ?? ""
        return [
            "id": text("id") ?? "", "aud": "authenticated", "role": "authenticated",
            "email": text("email") ?? "", "phone": "",
            "email_confirmed_at": anonymous ? NSNull() : created, "confirmed_at": anonymous ? NSNull() : created,
            "last_sign_in_at": text("last_sign_in_at") ?? NSNull(),
            "app_metadata": ["provider": anonymous ? "anonymous" : "email", "providers": anonymous ? [] : ["email"]],
            "user_metadata": [String: Any](), "identities": [Any](),
            "created_at": created, "updated_at": text("updated_at") ?? "", "is_anonymous": anonymous,
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

    /// Argon2id is deliberately slow (`interactive`: ~64 MiB, tens of ms): run it
    /// on a dispatch queue, not on Swift's few cooperative threads.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { done in
            DispatchQueue.global(qos: .userInitiated).async { done.resume(with: Result { try work() }) }
        }
    }

    static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { done in
            DispatchQueue.global(qos: .userInitiated).async { done.resume(returning: work()) }
        }
    }
}
