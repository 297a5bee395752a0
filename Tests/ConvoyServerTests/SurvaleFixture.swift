import Foundation
import Testing
@testable import ConvoyServer

/// Survale's people on a test server: two agencies; agency A with teams A1
/// and A2, agency B with team B1; users provisioned by the service role as an
/// agency provisions them.
struct SurvaleFixture {
    let s: TestServer
    var agencies: [String: String] = [:]
    var teams: [String: String] = [:]

    struct Member: Sendable {
        let id: String
        let token: String
        let callsign: String
        var email = ""
    }

    static func server(_ store: TestStore, _ configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> SurvaleFixture {
        let s = try await TestServer(store: store) {
            $0.app = "survale"
            configure(&$0)
        }
        var f = SurvaleFixture(s: s)
        for agency in ["A", "B"] { f.agencies[agency] = try await f.insert("agencies", ["name": "Agency \(agency)"])["id"] as? String }
        for (team, agency) in [("A1", "A"), ("A2", "A"), ("B1", "B")] {
            f.teams[team] = try await f.insert("teams", ["name": team, "agency_id": f.agencies[agency]!])["id"] as? String
        }
        return f
    }

    /// A row inserted with the service key, as returned.
    func insert(_ table: String, _ row: [String: Any]) async throws -> [String: Any] {
        let r = try await s.request("POST", "/rest/v1/\(table)", body: row, token: s.keys.serviceRoleKey, apikey: .some(s.keys.serviceRoleKey),
                                    headers: ["Prefer": "return=representation"])
        #expect(r.status == 201, "\(table): \(String(decoding: r.body, as: UTF8.self))")
        return r.rows.first ?? [:]
    }

    /// A user of `team` (A1, A2, B1), signed up and provisioned.
    func member(_ team: String, callsign: String) async throws -> Member {
        let user = try await s.signUp(withProfile: false)
        let agency = team.hasPrefix("A") ? agencies["A"]! : agencies["B"]!
        _ = try await insert("users", ["id": user.id, "team_id": teams[team]!, "agency_id": agency, "callsign": callsign])
        return Member(id: user.id, token: user.token, callsign: callsign, email: user.email)
    }

    /// `m` signed in again (a fresh access token).
    func signedIn(_ m: Member) async throws -> Member {
        let r = try await s.request("POST", "/auth/v1/token?grant_type=password", body: ["email": m.email, "password": "secret123"])
        return Member(id: m.id, token: try #require(r.object["access_token"] as? String), callsign: m.callsign, email: m.email)
    }

    func rpc(_ name: String, _ args: [String: Any], as who: Member) async throws -> TestServer.Reply {
        try await s.request("POST", "/rest/v1/rpc/\(name)", body: args, token: who.token)
    }

    func post(_ table: String, _ row: [String: Any], as who: Member) async throws -> TestServer.Reply {
        try await s.request("POST", "/rest/v1/\(table)", body: row, token: who.token, headers: ["Prefer": "return=representation"])
    }

    func get(_ path: String, as who: Member) async throws -> [[String: Any]] {
        try await s.request("GET", "/rest/v1/\(path)", token: who.token).rows
    }

    /// An operation `ca` created and started, with `members` invited and accepted.
    func activeOperation(by ca: Member, with members: [Member]) async throws -> String {
        let created = try await rpc("create_operation", ["name": "Op \(UUID().uuidString.prefix(4))", "incident_number": "24-001"], as: ca)
        #expect(created.status == 200, "\(String(decoding: created.body, as: UTF8.self))")
        let op = try #require(created.object["id"] as? String)
        for m in members {
            let invite = try await post("operation_invites", ["operation_id": op, "invitee_id": m.id, "invited_by": ca.id], as: ca)
            #expect(invite.status == 201, "\(String(decoding: invite.body, as: UTF8.self))")
            let id = try #require(invite.rows.first?["id"])
            #expect(try await rpc("respond_to_invite", ["invite_id": id, "accept": true], as: m).status == 200)
        }
        #expect(try await rpc("start_operation", ["operation_id": op], as: ca).status == 200)
        return op
    }
}
