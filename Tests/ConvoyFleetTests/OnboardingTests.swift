import ConvoyFleet
import ConvoyJSON
import ConvoyServer
import ConvoySodium
import ConvoyWire
import Foundation
import Logging
import Synchronization
import Testing

/// Devices sign up, publish their keys and pair as the social graph says,
/// against an embedded `convoy serve`.
@Suite struct OnboardingTests {
    @Test func devicesOnboardAndPairAsTheGraphSays() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let embedded = try await EmbeddedServer.start(.testing, logger: logger)
        let keys = embedded.keys

        let engine = try HTTPEngine()
        let onboarding = Onboarding(engine: engine, target: SupabaseTarget(url: keys.url, anonKey: keys.anonKey), runID: "t1")
        var accounts: [DeviceAccount] = []
        for i in 0..<12 { accounts.append(try await onboarding.signUp(i, on: try HTTPConnection(engine: engine))) }
        #expect(Set(accounts.map(\.userID)).count == 12 && !accounts[0].description.contains(accounts[0].password))

        let graph = SocialGraph(devices: 12, social: Social(friends: 2...3, communities: 2, decideLater: 0.25), seed: 5)
        #expect(!graph.pairs.isEmpty && graph.pairs.contains(where: \.pending) && graph.pairs.contains { !$0.pending })
        let friends = try await onboarding.pair(graph, accounts: accounts, preference: { a, _ in a.isMultiple(of: 3) ? "general" : "precise" })
        for device in 0..<12 {
            let expected = graph.friendships(of: device)
            #expect(friends[device].count == expected.count)
            for f in friends[device] {
                #expect(f.publicKey == accounts[f.index].keys.publicKey, "the friend's published key")
                #expect(f.iShare == (device.isMultiple(of: 3) ? "general" : "precise"))
                let pair = try #require(expected.first { Set([$0.inviter, $0.invitee]) == [device, f.index] })
                #expect(f.active == !pair.pending)
            }
        }
        // What the backend holds, read as the service role.
        let admin = SupabaseREST(SupabaseHTTP(engine: engine, target: SupabaseTarget(url: keys.url, anonKey: keys.serviceRoleKey)))
        let active = try await admin.select("friendships", query: "select=id&status=eq.active", token: keys.serviceRoleKey)
        let open = try await admin.select("invites", query: "select=code&accepted_by=is.null", token: keys.serviceRoleKey)
        #expect(active.count == graph.pairs.filter { !$0.pending }.count)
        #expect(open.count == graph.pairs.filter(\.pending).count, "decide-later invites stay unaccepted")
        engine.shutdown()
        await embedded.stop()
    }

    /// For projects that confirm emails: the service key's admin API makes a confirmed user, which then signs in.
    @Test func devicesCanSignUpThroughTheAdminAPI() async throws {
        try await withEmbeddedBackend { embedded, engine in
            let keys = embedded.keys
            var onboarding = Onboarding(engine: engine, target: SupabaseTarget(url: keys.url, anonKey: keys.anonKey), runID: "adm")
            onboarding.adminKey = keys.serviceRoleKey
            let a = try await onboarding.signUp(0), b = try await onboarding.signUp(1)
            #expect(a.userID != b.userID && a.session.email == onboarding.email(0))
            // A session of its own (signed in with its password), and its key published as the app publishes it.
            let friends = try await onboarding.pair(SocialGraph(devices: 2, social: Social(friends: 1...1), seed: 1), accounts: [a, b],
                                                    preference: { _, _ in "precise" })
            #expect(friends[0].map(\.publicKey) == [b.keys.publicKey] && friends[1].map(\.publicKey) == [a.keys.publicKey])
            // The anon key is no admin key: the admin API refuses it.
            onboarding.adminKey = keys.anonKey
            await #expect(throws: SupabaseError.self) { try await onboarding.signUp(2) }
        }
    }

    /// A reset takes a set-up request's answer (`AnswerLosingProxy`): the sign-up's after the backend made the
    /// account, or before it had the request; or the key's publication's, likewise. The device ends signed up
    /// once, with its key published, and says it tried again.
    @Test(arguments: [(1, true), (1, false), (2, true), (2, false)])
    func aSignUpWhoseAnswerIsLostIsFinishedOrMadeAgain(lose: Int, forward: Bool) async throws {
        try await withEmbeddedBackend { embedded, engine in
            let keys = embedded.keys
            let upstream = try #require(URLComponents(string: keys.url)?.port)
            let proxy = try AnswerLosingProxy(upstream: upstream, lose: lose, forward: forward)
            defer { proxy.stop() }
            let onboarding = Onboarding(engine: engine, target: SupabaseTarget(url: "http://127.0.0.1:\(proxy.port)", anonKey: keys.anonKey),
                                        runID: "lost\(lose)\(forward)")
            let retries = Mutex<[SupabaseError]>([])
            let account = try await onboarding.signUp(0, on: try HTTPConnection(engine: engine)) { e in retries.withLock { $0.append(e) } }
            let lost = proxy.seen.withLock(\.lost)
            #expect(lost == [lose == 1 ? "POST /auth/v1/signup HTTP/1.1" : "POST /rest/v1/users?on_conflict=id HTTP/1.1"])
            // The sign-up's connection was new, so only Onboarding can try again; the key's went on a reused one,
            // which the HTTP engine may already have sent again itself (as libcurl does).
            let tried = retries.withLock { $0.map(\.gotNoAnswer) }
            #expect(lose == 1 ? tried == [true] : tried.count <= 1 && !tried.contains(false), "\(tried)")
            // Signed up once, under its email, with the key it holds published.
            let admin = SupabaseREST(SupabaseHTTP(engine: engine, target: SupabaseTarget(url: keys.url, anonKey: keys.serviceRoleKey)))
            let users = try await admin.select("users", query: "select=id,public_key", token: keys.serviceRoleKey)
            #expect(users.count == 1 && users.first?["id"]?.string == account.userID)
            #expect(users.first?["public_key"]?.string == account.keys.publicKey.base64)
            let again = try await onboarding.app.signIn(email: onboarding.email(0), password: account.password,
                                                        via: SupabaseHTTP(engine: engine, target: SupabaseTarget(url: keys.url, anonKey: keys.anonKey)))
            #expect(again.userID == account.userID)
        }
    }

    /// With no retries left, the lost answer is the run's error, and a refusal is never tried again.
    @Test func aLostAnswerIsTheErrorWhenNoRetryIsLeft() async throws {
        try await withEmbeddedBackend { embedded, engine in
            let keys = embedded.keys
            let proxy = try AnswerLosingProxy(upstream: try #require(URLComponents(string: keys.url)?.port), lose: 1, forward: true)
            defer { proxy.stop() }
            var onboarding = Onboarding(engine: engine, target: SupabaseTarget(url: "http://127.0.0.1:\(proxy.port)", anonKey: keys.anonKey),
                                        runID: "noretry")
            onboarding.noAnswerRetries = 0
            let error = await #expect(throws: SupabaseError.self) { try await onboarding.signUp(0) }
            #expect(error?.gotNoAnswer == true)
            // A second device whose sign-up is refused (the email is taken: device 0's, made by the lost attempt).
            onboarding.noAnswerRetries = 4
            let retries = Mutex(0)
            let refused = await #expect(throws: SupabaseError.self) {
                try await onboarding.signUp(0) { _ in retries.withLock { $0 += 1 } }
            }
            #expect(refused?.status == 422 && retries.withLock { $0 } == 0)
        }
    }

    /// A shard signing in another shard's device and refused by the server's rate limit is told so, and how to
    /// lift it, not asked whether the other shard is running.
    @Test func aRateLimitedSignInOfAnotherShardsDeviceSaysItIsTheRateLimit() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = ServerConfiguration.testing
        configuration.rateLimits = .supabase
        let embedded = try await EmbeddedServer.start(configuration, logger: logger)
        let engine = try HTTPEngine()
        defer { engine.shutdown() }
        let onboarding = Onboarding(engine: engine, target: SupabaseTarget(url: embedded.keys.url, anonKey: embedded.keys.anonKey), runID: "rl")
        // Nobody signed up: each attempt is refused (400) and counted, until the bucket of 30 is empty (429).
        var last = ""
        for _ in 0..<40 {
            do {
                _ = try await onboarding.signIn(3, password: "not-its-password", deadline: 0)
            } catch {
                last = "\(error)"
            }
            if last.contains("HTTP 429") { break }
        }
        #expect(last.contains("HTTP 429"), "\(last)")
        #expect(last.contains("rate limit") && last.contains("--rate-limits off"), "\(last)")
        #expect(!last.contains("is its shard running"), "\(last)")
        // Refused for not being there (400), the question stands.
        let open = try await EmbeddedServer.start(.testing, logger: logger)
        let other = Onboarding(engine: engine, target: SupabaseTarget(url: open.keys.url, anonKey: open.keys.anonKey), runID: "rl")
        await #expect { _ = try await other.signIn(3, password: "not-its-password", deadline: 0) } throws: { error in
            "\(error)".contains("is its shard running")
        }
        await open.stop()
        await embedded.stop()
    }
}
