@testable import ConvoyServer
import Testing

/// `purge_old_locations(retention)` on the SQLite store: the service role's alone, as PostgreSQL grants it, with the
/// retention read as PostgreSQL reads an interval (what it cannot read is 22007, not a guess).
@Suite struct GreenBoxPurgeRPCTests {
    @Test func theRetentionIsReadAsAnInterval() throws {
        #expect(try GreenBoxServer.interval("10 minutes") == 600)
        #expect(try GreenBoxServer.interval("1 hour 30 mins") == 5400)
        #expect(try GreenBoxServer.interval("0 seconds") == 0)
        #expect(try GreenBoxServer.interval("100 years") == 100 * 31_557_600)
        for bad in ["", "ten minutes", "10", "10 fortnights", "nan seconds"] {
            #expect(throws: APIError.self, "\(bad)") { try GreenBoxServer.interval(bad) }
        }
    }

    @Test func onlyTheServiceRoleMayPurge() async throws {
        let s = try await TestServer()
        defer { Task { await s.stop() } }
        let user = try await s.signUp()
        let asUser = try await s.request("POST", "/rest/v1/rpc/purge_old_locations", body: ["retention": "0 seconds"], token: user.token)
        #expect(asUser.status == 403 && asUser.object["code"] as? String == "42501")
        let asAnon = try await s.request("POST", "/rest/v1/rpc/purge_old_locations", body: ["retention": "0 seconds"])
        #expect(asAnon.status == 401)
        let asService = try await s.request("POST", "/rest/v1/rpc/purge_old_locations", body: ["retention": "100 years"],
                                            token: s.keys.serviceRoleKey, apikey: .some(s.keys.serviceRoleKey))
        #expect(asService.status == 200, "\(asService.status)")
        let bad = try await s.request("POST", "/rest/v1/rpc/purge_old_locations", body: ["retention": "soon"],
                                      token: s.keys.serviceRoleKey, apikey: .some(s.keys.serviceRoleKey))
        #expect(bad.status == 400 && bad.object["code"] as? String == "22007")
    }
}
