import ConvoyJSON
import Foundation

/// GoTrue (`/auth/v1`): sign-up, password sign-in, token refresh.
public struct SupabaseAuth: Sendable {
    public let http: SupabaseHTTP

    public init(_ http: SupabaseHTTP) { self.http = http }

    /// Email and password sign-up (auto-confirmed on `convoy serve`; a project
    /// with email confirmation on returns no session, which is an error here).
    public func signUp(email: String, password: String) async throws(SupabaseError) -> Session {
        try Self.session(try await http.send("POST", "/auth/v1/signup", body: SupabaseHTTP.json(["email": .string(email), "password": .string(password)])))
    }

    /// `POST /admin/users` with the service role: a confirmed user (`email_confirm`), no session; its id.
    /// For projects that confirm emails: the user then signs in with its password.
    @discardableResult
    public func adminCreateUser(email: String, password: String, serviceKey: String) async throws(SupabaseError) -> String {
        let r = try await http.send("POST", "/auth/v1/admin/users", body: SupabaseHTTP.json(["email": .string(email), "password": .string(password), "email_confirm": true]),
                                    token: serviceKey)
        guard let id = JSONScanner.parse(r.body)?["id"]?.string
        else { throw SupabaseError(kind: .unexpectedResponse, message: "admin/users returned no user id") }
        return id
    }

    public func signIn(email: String, password: String) async throws(SupabaseError) -> Session {
        try Self.session(try await http.send("POST", "/auth/v1/token?grant_type=password",
                                             body: SupabaseHTTP.json(["email": .string(email), "password": .string(password)])))
    }

    /// A new session for a refresh token (which rotates: keep the new one).
    public func refresh(_ refreshToken: String) async throws(SupabaseError) -> Session {
        try Self.session(try await http.send("POST", "/auth/v1/token?grant_type=refresh_token",
                                             body: SupabaseHTTP.json(["refresh_token": .string(refreshToken)])))
    }

    /// `POST /logout`: the session's refresh tokens are revoked.
    public func signOut(_ accessToken: String) async throws(SupabaseError) {
        _ = try await http.send("POST", "/auth/v1/logout", token: accessToken)
    }

    static func session(_ r: HTTPResponse) throws(SupabaseError) -> Session {
        guard let o = JSONScanner.parse(r.body), let access = o["access_token"]?.string, let refresh = o["refresh_token"]?.string,
              let user = o["user"], let id = user["id"]?.string
        else { throw SupabaseError(kind: .unexpectedResponse, message: "no session in the response (is email confirmation on?)") }
        let expiresAt = o["expires_at"]?.double ?? Date().timeIntervalSince1970 + (o["expires_in"]?.double ?? 3600)
        let email = user["email"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        return Session(accessToken: access, refreshToken: refresh, expiresAt: expiresAt, userID: id, email: email)
    }
}
