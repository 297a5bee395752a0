@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import HTTPTypes
import Testing

/// `convoy serve`'s rate limits: hosted Supabase Auth's per-IP limits (exactly the 31st sign-in refused, with
/// GoTrue's body and Retry-After), a rolling window moved by the test's clock, limits per caller and for
/// failures only from a file, PostgREST's shape on REST routes, and a file's errors naming line, column and key.
@Suite struct RateLimitTests {
    @Test func supabaseSignInLimitRefusesExactlyTheThirtyFirstAndResetsAfterTheWindow() async throws {
        let s = try await TestServer { $0.rateLimits = .supabase }
        defer { Task { await s.stop() } }
        var statuses: [Int] = []
        for _ in 0..<31 {
            let r = try await s.request("POST", "/auth/v1/token?grant_type=password", body: ["email": "nobody@example.com", "password": "wrong-one"])
            statuses.append(r.status)
        }
        #expect(statuses.prefix(30).allSatisfy { $0 == 400 }, "wrong passwords: GoTrue's 400 invalid_credentials, \(statuses)")
        #expect(statuses.last == 429)
        let refused = try await s.request("POST", "/auth/v1/signup", body: ["email": "new@example.com", "password": "secret123"])
        #expect(refused.status == 429, "sign-ups share the sign-in limit")
        #expect(refused.object["error_code"] as? String == "over_request_rate_limit")
        #expect(refused.object["code"] as? Int == 429)
        #expect(refused.object["msg"] as? String == "Request rate limit reached")
        let wait = try #require(refused.headers["retry-after"].flatMap(Int.init))
        #expect(wait > 0 && wait <= 300)
        // Refreshes are another limit: not refused.
        let refresh = try await s.request("POST", "/auth/v1/token?grant_type=refresh_token", body: ["refresh_token": "not-a-token"])
        #expect(refresh.status != 429)
        // The window rolls: five minutes after the first attempts, they are let through again.
        s.clock.advance(to: s.clock.now() + 300.5)
        let again = try await s.request("POST", "/auth/v1/signup", body: ["email": "new@example.com", "password": "secret123"])
        #expect(again.status == 200)
    }

    @Test func offMeansNoLimit() async throws {
        let s = try await TestServer { $0.rateLimits = .supabase; $0.rateLimitsEnabled = false }
        defer { Task { await s.stop() } }
        for _ in 0..<40 {
            let r = try await s.request("POST", "/auth/v1/token?grant_type=password", body: ["email": "nobody@example.com", "password": "wrong-one"])
            #expect(r.status == 400)
        }
    }

    @Test func aMigrationsFoldersLimitsAddToTheGivenOnesUnlessOff() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("limits-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try "limits:\n  - {name: guesses, route: POST /rest/v1/rpc/guess, per: caller, limit: 5, window: 1h}\n"
            .write(to: dir.appendingPathComponent(RateLimits.migrationsFile), atomically: true, encoding: .utf8)
        var config = ServerConfiguration.testing
        config.rateLimits = .supabase
        config.migrationsDirectory = dir.path
        #expect(try config.effectiveRateLimits().rules.map(\.name) == ["sign_in_sign_ups", "token_refresh", "token_verifications", "guesses"])
        config.rateLimitsEnabled = false
        #expect(try config.effectiveRateLimits() == .off)
    }

    /// Ways around a limit that a router or a handler would not notice: empty path segments, a repeated query
    /// parameter (the handler reads the first), and a burst of concurrent failures (counted as they are admitted).
    @Test func theLimitHoldsAgainstOddPathsRepeatedParametersAndBursts() async throws {
        let limits = try RateLimitFile.parse("""
            limits:
              - {name: logins, route: POST /auth/v1/token?grant_type=password, per: ip, count: failures, limit: 3, window: 15m}
            """, file: "limits.yaml")
        let s = try await TestServer { $0.rateLimits = limits }
        defer { Task { await s.stop() } }
        let wrong = ["email": "nobody@example.com", "password": "wrong-one"]
        // Eight wrong passwords at once: no more than three get through to be checked.
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 { group.addTask { try await s.request("POST", "/auth/v1/token?grant_type=password", body: wrong).status } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 400 }.count == 3 && statuses.filter { $0 == 429 }.count == 5, "\(statuses)")
        for path in ["//auth/v1/token?grant_type=password", "/auth/v1/token/?grant_type=password", "/auth//v1/token?grant_type=password",
                     "/auth/v1/token?grant_type=password&grant_type=refresh_token"] {
            let r = try await s.request("POST", path, body: wrong)
            #expect(r.status == 429 || r.status == 404, "\(path): \(r.status) - a way around the limit")
        }
    }

    @Test func aFilesLimitsCountPerCallerAndFailuresWithPostgRESTsShape() async throws {
        let limits = try RateLimitFile.parse("""
            limits:
              - name: location_posts
                route: POST /rest/v1/encrypted_locations
                per: caller
                limit: 3
                window: 1m
                message: Slow down.
              - name: failed_logins
                route: POST /auth/v1/token?grant_type=password
                per: ip
                count: failures
                limit: 2
                window: 15m
            """, file: "limits.yaml")
        let s = try await TestServer { $0.rateLimits = limits }
        defer { Task { await s.stop() } }
        let a = try await s.signUp(), b = try await s.signUp()
        func post(_ u: TestServer.User) async throws -> TestServer.Reply {
            try await s.request("POST", "/rest/v1/encrypted_locations", body: ["sender_id": u.id, "recipient_id": u.id, "payload": "AAAA"],
                                token: u.token, headers: ["Prefer": "return=minimal"])
        }
        var seen: [Int] = []
        for _ in 0..<4 { seen.append(try await post(a).status) }
        #expect(seen == [201, 201, 201, 429], "per caller: a's 4th is refused, \(seen)")
        #expect(try await post(b).status == 201, "b counts apart")
        let refused = try await post(a)
        #expect(refused.object["code"] as? String == "PT429")
        #expect(refused.object["message"] as? String == "Slow down.")
        #expect((refused.object["details"] as? String)?.contains("location_posts: 3 per 1m per caller") == true)
        #expect(refused.headers["retry-after"] != nil)
        // Failures only: a right password neither counts nor is refused before the limit; two wrong ones fill it.
        let good = try await s.request("POST", "/auth/v1/token?grant_type=password", body: ["email": a.email, "password": "secret123"])
        #expect(good.status == 200)
        for _ in 0..<2 {
            #expect(try await s.request("POST", "/auth/v1/token?grant_type=password", body: ["email": a.email, "password": "nope-nope"]).status == 400)
        }
        let locked = try await s.request("POST", "/auth/v1/token?grant_type=password", body: ["email": a.email, "password": "secret123"])
        #expect(locked.status == 429, "past the failures, even the right password waits")
        // The service role (a seed's set-up, an admin tool) is never limited: a's row posted five times more with its key.
        for _ in 0..<5 {
            let r = try await s.request("POST", "/rest/v1/encrypted_locations", body: ["sender_id": a.id, "recipient_id": a.id, "payload": "AAAA"],
                                        token: s.keys.serviceRoleKey, apikey: .some(s.keys.serviceRoleKey), headers: ["Prefer": "return=minimal"])
            #expect(r.status == 201, "the service role is not limited: \(r.status)")
        }
    }

    @Test func aBadFileNamesLineColumnAndKey() throws {
        func problem(_ text: String) -> String {
            do {
                _ = try RateLimitFile.parse(text, file: "nc/rate-limits.yaml")
                return "parsed"
            } catch {
                return error.description
            }
        }
        #expect(problem("limits:\n  - name: x\n    route: POST /a\n    limit: 5\n    windw: 1h\n").hasPrefix("nc/rate-limits.yaml:5:5: limits[0].windw: unknown key"))
        #expect(problem("limits:\n  - name: x\n    route: /a\n    limit: 5\n    window: 1h\n").contains(":3:12: limits[0].route: expected METHOD /path"))
        #expect(problem("limits:\n  - name: x\n    route: POST /a\n    limit: lots\n    window: 1h\n").contains(":4:12: limits[0].limit"))
        #expect(problem("limits:\n  - name: x\n    route: POST /a\n    limit: 5\n    window: soon\n").contains(":5:13: limits[0].window"))
        #expect(problem("limits:\n  - name: x\n    route: POST /a\n    per: device\n    limit: 5\n    window: 1h\n").contains("limits[0].per: ip, caller or project"))
        #expect(problem("limits: 3\n").contains("limits: give limits: a list"))
    }

    @Test func routesMatchMethodPathPrefixAndQuery() throws {
        let r = try #require(RateLimitRule.Route("POST /auth/v1/token?grant_type=password"))
        #expect(r.matches(method: "POST", path: "/auth/v1/token", query: ["grant_type": "password"]))
        #expect(!r.matches(method: "POST", path: "/auth/v1/token", query: ["grant_type": "refresh_token"]))
        #expect(!r.matches(method: "GET", path: "/auth/v1/token", query: ["grant_type": "password"]))
        let prefix = try #require(RateLimitRule.Route("* /rest/v1/rpc/*"))
        #expect(prefix.matches(method: "GET", path: "/rest/v1/rpc/anything", query: [:]))
        #expect(!prefix.matches(method: "GET", path: "/rest/v1/users", query: [:]))
        #expect(RateLimitRule.Route("FETCH /x") == nil && RateLimitRule.Route("POST x") == nil)
    }

    @Test func postgrestsPTCodesBecomeTheirStatus() {
        #expect(PostgresStore.status("PT429", role: .authenticated).code == 429)
        #expect(PostgresStore.status("PT402", role: .authenticated).code == 402)
        #expect(PostgresStore.status("PTXYZ", role: .authenticated).code == 400)
    }
}
