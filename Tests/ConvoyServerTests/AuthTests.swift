@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

@Suite struct AuthTests {
    @Test(arguments: TestStore.all) func signUpReturnsASupabaseSessionAndClaims(store: TestStore) async throws {
        let s = try await TestServer(store: store) { $0.tokenTTL = 120 }
        let r = try await s.request("POST", "/auth/v1/signup", body: ["email": "Alice@Example.com", "password": "secret123"])
        #expect(r.status == 200)
        let session = r.object
        #expect(session["token_type"] as? String == "bearer")
        #expect(session["expires_in"] as? Int == 120)
        let user = try #require(session["user"] as? [String: Any])
        #expect(user["email"] as? String == "alice@example.com")
        #expect(user["aud"] as? String == "authenticated" && user["role"] as? String == "authenticated")
        #expect(user["is_anonymous"] as? Bool == false)
        let claims = TestServer.claims(session["access_token"] as! String)
        #expect(claims["sub"] as? String == user["id"] as? String)
        #expect(claims["aud"] as? String == "authenticated" && claims["role"] as? String == "authenticated")
        #expect(claims["session_id"] is String && claims["iss"] is String)
        #expect((claims["exp"] as! Int) - (claims["iat"] as! Int) == 120)
        #expect(session["expires_at"] as? Int == claims["exp"] as? Int)
        await s.stop()
    }

    @Test(arguments: TestStore.all) func anonymousSignUpAndBadSignUps(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let anon = try await s.request("POST", "/auth/v1/signup", body: [String: Any]())
        #expect(anon.status == 200)
        #expect((anon.object["user"] as? [String: Any])?["is_anonymous"] as? Bool == true)
        #expect(TestServer.claims(anon.object["access_token"] as! String)["is_anonymous"] as? Bool == true)

        _ = try await s.signUp("dup@example.com", withProfile: false)
        let dup = try await s.request("POST", "/auth/v1/signup", body: ["email": "DUP@example.com", "password": "secret123"])
        #expect(dup.status == 422 && dup.object["error_code"] as? String == "user_already_exists")
        let weak = try await s.request("POST", "/auth/v1/signup", body: ["email": "w@example.com", "password": "123"])
        #expect(weak.status == 422 && weak.object["error_code"] as? String == "weak_password")
        let bad = try await s.request("POST", "/auth/v1/signup", body: ["email": "not an email", "password": "secret123"])
        #expect(bad.status == 400)
        let junk = try await s.request("POST", "/auth/v1/signup", rawBody: Data("{nope".utf8))
        #expect(junk.status == 400 && junk.object["error_code"] as? String == "bad_json")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func passwordGrant(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let u = try await s.signUp("bob@example.com", withProfile: false)
        let ok = try await s.request("POST", "/auth/v1/token?grant_type=password", body: ["email": "bob@example.com", "password": "secret123"])
        #expect(ok.status == 200)
        #expect((ok.object["user"] as? [String: Any])?["id"] as? String == u.id)
        for (email, pw) in [("bob@example.com", "wrong-password"), ("nobody@example.com", "secret123")] {
            let no = try await s.request("POST", "/auth/v1/token?grant_type=password", body: ["email": email, "password": pw])
            #expect(no.status == 400 && no.object["error_code"] as? String == "invalid_credentials")
        }
        let grant = try await s.request("POST", "/auth/v1/token?grant_type=magic", body: [String: Any]())
        #expect(grant.status == 400)
        await s.stop()
    }

    @Test(arguments: TestStore.all) func refreshTokensRotateAndReuseRevokesTheSession(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let u = try await s.signUp(withProfile: false)
        let first = try await s.request("POST", "/auth/v1/token?grant_type=refresh_token", body: ["refresh_token": u.refresh])
        #expect(first.status == 200)
        let next = try #require(first.object["refresh_token"] as? String)
        #expect(next != u.refresh)
        // Within 10 s (a retried request) the old token gets the same successor.
        s.clock.advance(by: 5)
        let retry = try await s.request("POST", "/auth/v1/token?grant_type=refresh_token", body: ["refresh_token": u.refresh])
        #expect(retry.status == 200 && retry.object["refresh_token"] as? String == next)
        // Later, the old token again is reuse: refused, and its whole session ends.
        s.clock.advance(by: 6)
        let reuse = try await s.request("POST", "/auth/v1/token?grant_type=refresh_token", body: ["refresh_token": u.refresh])
        #expect(reuse.status == 400 && reuse.object["error_code"] as? String == "refresh_token_already_used")
        let afterReuse = try await s.request("POST", "/auth/v1/token?grant_type=refresh_token", body: ["refresh_token": next])
        #expect(afterReuse.status == 400, "a reused token revokes the whole session")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func logoutEndsTheSession(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let u = try await s.signUp(withProfile: false)
        #expect(try await s.request("GET", "/auth/v1/user", token: u.token).status == 200)
        #expect(try await s.request("POST", "/auth/v1/logout", token: u.token).status == 204)
        let user = try await s.request("GET", "/auth/v1/user", token: u.token)
        #expect(user.status == 403 && user.object["error_code"] as? String == "session_not_found")
        #expect(try await s.request("POST", "/auth/v1/token?grant_type=refresh_token", body: ["refresh_token": u.refresh]).status == 400)
        await s.stop()
    }

    @Test(arguments: TestStore.all) func adminUsersNeedsTheServiceRole(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let body = ["email": "made@example.com", "password": "secret123"]
        #expect(try await s.request("POST", "/auth/v1/admin/users", body: body, token: s.keys.anonKey).status == 403)
        let u = try await s.signUp(withProfile: false)
        #expect(try await s.request("POST", "/auth/v1/admin/users", body: body, token: u.token).status == 403)
        let ok = try await s.request("POST", "/auth/v1/admin/users", body: body, token: s.keys.serviceRoleKey,
                                     apikey: .some(s.keys.serviceRoleKey))
        #expect(ok.status == 200 && ok.object["email"] as? String == "made@example.com")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func apiKeyIsRequiredAndChecked(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let none = try await s.request("GET", "/rest/v1/users", apikey: .none)
        #expect(none.status == 401 && (none.object["message"] as? String)?.contains("No API key") == true)
        let wrong = try await s.request("GET", "/rest/v1/users", apikey: .some("not-a-key"))
        #expect(wrong.status == 401)
        let u = try await s.signUp(withProfile: false)
        #expect(try await s.request("GET", "/rest/v1/users", apikey: .some(u.token)).status == 401, "a user token is not an API key")
        #expect(try await s.request("GET", "/rest/v1/users?apikey=\(s.keys.anonKey)", apikey: .none).status == 200)
        await s.stop()
    }

    @Test(arguments: TestStore.all) func expiredForgedAndAlgNoneTokensAreRefused(store: TestStore) async throws {
        let s = try await TestServer(store: store) { $0.tokenTTL = 60 }
        let u = try await s.signUp()
        #expect(try await s.request("GET", "/rest/v1/users", token: u.token).status == 200)
        s.clock.advance(by: 61)
        let expired = try await s.request("GET", "/rest/v1/users", token: u.token)
        #expect(expired.status == 401 && expired.code == "PGRST303")
        let expiredAuth = try await s.request("GET", "/auth/v1/user", token: u.token)
        #expect(expiredAuth.status == 401 && expiredAuth.object["error_code"] as? String == "bad_jwt")

        // Same claims, signed with another secret; and the same claims with alg "none".
        let parts = u.token.split(separator: ".")
        let forged = parts[0] + "." + parts[1] + ".c2lnbmF0dXJl"
        let none = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + "."
        for token in [String(forged), none] {
            let r = try await s.request("GET", "/rest/v1/users", token: token)
            #expect(r.status == 401 && r.code == "PGRST301")
        }
        await s.stop()
    }

    /// Verified tokens are remembered by their text (a phone sends the same ones with every request), never
    /// more than the capacity; the expiry is still read at each use (above: the token, used and so
    /// remembered, is refused once expired).
    @Test func verifiedTokensAreBounded() {
        let tokens = VerifiedTokens()
        let claims = Claims(iss: "convoy", exp: 1, iat: 0, role: "anon")
        for i in 0..<VerifiedTokens.capacity { tokens.remember("t\(i)", claims) }
        #expect(tokens.count == VerifiedTokens.capacity && tokens.claims(of: "t0") == claims)
        tokens.remember("one more", claims)
        #expect(tokens.count == 1 && tokens.claims(of: "t0") == nil && tokens.claims(of: "one more") == claims)
    }
}

/// A restart keeps the project's JWT secret, as Supabase never changes it:
/// every phone's token still works; an explicit `--jwt-secret` still wins.
@Suite struct JWTSecretTests {
    @Test(arguments: TestStore.all) func aRestartWithoutASecretKeepsEveryTokenValid(store: TestStore) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-secret-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let s = try await TestServer(store: store) { c in
            if store == .sqlite { c.databasePath = dir.appendingPathComponent("convoy.sqlite").path }
        }
        #expect(s.server.configuration.jwtSecret == nil)
        let user = try await s.signUp()
        await s.stop()

        var config = s.server.configuration
        config.port = 0
        let again = try await TestServer(store: store) { $0 = config }
        #expect(try await again.request("GET", "/auth/v1/user", token: user.token).status == 200, "the old access token")
        let refreshed = try await again.request("POST", "/auth/v1/token?grant_type=refresh_token", body: ["refresh_token": user.refresh])
        #expect(refreshed.status == 200, "\(String(decoding: refreshed.body, as: UTF8.self))")
        await again.stop()

        // An explicit secret wins over the stored one: the old token is refused.
        config.jwtSecret = String(repeating: "k", count: 40)
        let explicit = try await TestServer(store: store) { $0 = config }
        #expect(try await explicit.request("GET", "/auth/v1/user", token: user.token).status == 401)
        await explicit.stop()
        if store == .sqlite {
            // It holds password hashes, refresh tokens and the secret: private.
            let mode = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("convoy.sqlite").path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }

    @Test func theTemporaryDatabaseFolderIsPrivate() async throws {
        let s = try await TestServer()
        let folder = try #require(s.server.temporaryDirectory)
        #expect(try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int == 0o700)
        let file = folder.appendingPathComponent("convoy.sqlite").path
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        await s.stop()
    }
}
