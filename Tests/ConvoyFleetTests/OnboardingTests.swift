import ConvoyFleet
import ConvoyServer
import ConvoySodium
import ConvoyWire
import Foundation
import Logging
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
}
