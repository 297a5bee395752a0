@testable import ConvoyFleet
import ConvoyJSON
import ConvoyServer
import ConvoyWire
import Foundation
import Testing

/// A declared app's SQL served by the SQLite store answers as PostgreSQL does (docs/apps.md): the same requests, as
/// several users, to both stores serving examples/migrations/beacon, and the answers compared — status, the rows'
/// count and columns, the error's code. Its functions answer a value, or rows (`RETURNS SETOF`), given an array too.
@Suite(.serialized) struct DeclaredStoreAgreementTests {
    /// (who, method, path, body): `{{a.id}}`, `{{b.id}}`, `{{c.id}}`, `{{invite}}` (A's invite) and `{{follow}}` (B's
    /// follow of A) filled in.
    static let requests: [(String, String, String, String?)] = [
        ("a", "POST", "/rest/v1/devices", #"{"device_id":"{{uuid}}","owner_id":"{{a.id}}","box_key_hex":"\#(String(repeating: "ab", count: 32))"}"#),
        ("a", "POST", "/rest/v1/devices", #"{"device_id":"{{uuid}}","owner_id":"{{b.id}}","box_key_hex":"\#(String(repeating: "cd", count: 32))"}"#),
        ("a", "POST", "/rest/v1/devices", #"{"device_id":"{{uuid}}","owner_id":"{{a.id}}","box_key_hex":"short"}"#),
        ("b", "GET", "/rest/v1/devices?select=owner_id,box_key_hex&owner_id=eq.{{a.id}}", nil),
        ("anon", "GET", "/rest/v1/devices?select=owner_id", nil),
        ("a", "POST", "/rest/v1/invites", #"{"owner_id":"{{a.id}}"}"#),
        ("c", "POST", "/rest/v1/invites", #"{"owner_id":"{{a.id}}"}"#),
        ("b", "GET", "/rest/v1/invites?select=invite_id", nil),
        ("b", "POST", "/rest/v1/rpc/beacon_invite", #"{"invite":"{{invite}}"}"#),
        // A uuid argument read as uuid_in reads it: in braces and without hyphens it finds the same invite; no uuid is 22P02.
        ("b", "POST", "/rest/v1/rpc/beacon_invite", #"{"invite":"{{invite.braced}}"}"#),
        ("b", "POST", "/rest/v1/rpc/beacon_invite", #"{"invite":"not-a-uuid"}"#),
        ("b", "POST", "/rest/v1/rpc/beacon_keys", #"{"ids":["{{a.braced}}"]}"#),
        ("b", "POST", "/rest/v1/rpc/beacon_keys", #"{"ids":["{{a.id}}","{{b.id}}"]}"#),
        ("b", "POST", "/rest/v1/rpc/beacon_keys", #"{"ids":[]}"#),
        ("c", "POST", "/rest/v1/follows", #"{"leader":"{{a.id}}","follower":"{{b.id}}","invite_id":"{{invite}}"}"#),
        ("b", "POST", "/rest/v1/follows", #"{"leader":"{{c.id}}","follower":"{{b.id}}","invite_id":"{{invite}}"}"#),
        ("b", "POST", "/rest/v1/follows", #"{"leader":"{{a.id}}","follower":"{{b.id}}","invite_id":"{{invite}}","state":"accepted"}"#),
        ("b", "POST", "/rest/v1/follows", #"{"leader":"{{a.id}}","follower":"{{b.id}}","invite_id":"{{invite}}"}"#),
        ("a", "POST", "/rest/v1/beacons", #"{"from_user":"{{a.id}}","to_user":"{{b.id}}","box_hex":"00","sent_at":"2026-12-02T10:00:00Z"}"#),
        ("b", "PATCH", "/rest/v1/follows?follow_id=eq.{{follow}}", #"{"state":"accepted"}"#),
        ("c", "PATCH", "/rest/v1/follows?follow_id=eq.{{follow}}", #"{"state":"accepted"}"#),
        ("a", "PATCH", "/rest/v1/follows?follow_id=eq.{{follow}}", #"{"state":"accepted"}"#),
        ("c", "GET", "/rest/v1/follows?select=leader,follower,state", nil),
        ("b", "GET", "/rest/v1/follows?select=leader,follower,state", nil),
        ("b", "POST", "/rest/v1/beacons", #"{"from_user":"{{b.id}}","to_user":"{{a.id}}","box_hex":"00","sent_at":"2026-12-02T10:00:00Z"}"#),
        ("a", "POST", "/rest/v1/beacons", #"{"from_user":"{{b.id}}","to_user":"{{a.id}}","box_hex":"01","sent_at":"2026-12-02T10:00:00Z"}"#),
        ("a", "POST", "/rest/v1/beacons", #"{"from_user":"{{a.id}}","to_user":"{{b.id}}","box_hex":"02","sent_at":"2026-12-02T10:00:00Z"}"#),
        ("b", "GET", "/rest/v1/beacons?select=from_user,box_hex,sent_at&order=beacon_id.asc", nil),
        ("a", "GET", "/rest/v1/beacons?select=from_user", nil),
        ("c", "GET", "/rest/v1/beacons?select=from_user", nil),
        ("b", "DELETE", "/rest/v1/beacons?box_hex=eq.02", nil),
        ("b", "GET", "/rest/v1/beacons?select=box_hex&sent_at=lt.2026-12-02T11:00:00Z", nil),
        ("a", "POST", "/rest/v1/rpc/beacon_follows", #"{"fan":"{{b.id}}","star":"{{a.id}}"}"#),
        ("a", "POST", "/rest/v1/rpc/beacon_follows", #"{"fan":"{{a.id}}","star":"{{b.id}}"}"#),
        ("a", "POST", "/rest/v1/rpc/beacon_keys", #"{"who":["{{a.id}}"]}"#),
    ]

    /// What each request was answered, as comparable text: the status, then the rows' count and columns, or the error's code.
    static func answers(_ store: ProbeTests.Store) async throws -> [String] {
        var config = DeclaredBeaconTests.configuration(try AppFile.load(DeclaredBeaconTests.beacon))
        config.rateLimitsEnabled = false
        let (server, _) = try await ProbeTests.start(config, on: store)
        let engine = try HTTPEngine()
        defer { engine.shutdown() }
        var out: [String] = []
        do {
            let target = SupabaseTarget(url: server.keys.url, anonKey: server.keys.anonKey)
            let auth = SupabaseAuth(SupabaseHTTP(engine: engine, target: target))
            var tokens: [String: String] = ["anon": server.keys.anonKey]
            var values: [String: String] = [:]
            for who in ["a", "b", "c"] {
                let s = try await auth.signUp(email: "\(who)-\(UUID().uuidString.prefix(6))@agree.test", password: "agree-\(UUID().uuidString)")
                (tokens[who], values["\(who).id"]) = (s.accessToken, s.userID)
                values["\(who).braced"] = "{" + s.userID.replacingOccurrences(of: "-", with: "").uppercased() + "}"
            }
            for (who, method, path, body) in requests {
                let url = server.keys.url + (try Template.fill(path) { values[$0] })
                let request = HTTPRequest(method: method, url: url, headers: [("apikey", server.keys.anonKey), ("Authorization", "Bearer \(tokens[who] ?? "")"),
                                                                              ("Content-Type", "application/json"),
                                                                              // A beacon's sender may not read it back: as the phones do, it asks for nothing.
                                                                              ("Prefer", path == "/rest/v1/beacons" ? "return=minimal" : "return=representation")],
                                          body: try body.map { Array(try Template.fill($0) { values[$0] }.utf8) })
                let r = try await engine.send(request)
                let json = JSONScanner.parse(r.body)
                if path.hasPrefix("/rest/v1/follows"), method == "POST", r.status == 201, let id = json?.items.first?["follow_id"]?.string { values["follow"] = id }
                if path.hasPrefix("/rest/v1/invites"), method == "POST", r.status == 201, let id = json?.items.first?["invite_id"]?.string {
                    values["invite"] = id
                    values["invite.braced"] = "{" + id.replacingOccurrences(of: "-", with: "").uppercased() + "}"
                }
                var answer = "\(who) \(method) \(path.prefix(40)): \(r.status)"
                switch json {
                case .array(let rows)?: answer += " \(rows.count) rows " + (rows.first?.members.map(\.key).sorted().joined(separator: ",") ?? "")
                case .object?: answer += " code \(json?["code"]?.flatText ?? "-")"
                case let other?: answer += " \(other.text)"
                case nil: answer += " (no JSON)"
                }
                out.append(answer)
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        return out
    }

    @Test(.enabled(if: ProbeTests.Store.available.contains(.postgres), "PostgreSQL: scripts/pg-test-cluster run DIR swift test"))
    func sqliteAnswersTheSameRequestsAsPostgreSQL() async throws {
        let sqlite = try await Self.answers(.sqlite)
        let postgres = try await Self.answers(.postgres)
        #expect(sqlite.count == Self.requests.count)
        for (s, p) in zip(sqlite, postgres) { #expect(s == p, "SQLite: \(s)\nPostgreSQL: \(p)") }
        // And the answers are the policies' (a test that agrees on nothing but errors proves nothing).
        let expected = [(0, ": 201 1 rows"), (1, ": 403 code 42501"), (2, ": 400 code 23514"), (3, ": 200 0 rows"), (5, ": 201 1 rows"),
                        (6, ": 403"), (7, ": 200 0 rows"), (8, ": 200 1 rows invite_id,made_at,owner_id"), (9, ": 200 1 rows invite_id,made_at,owner_id"),
                        (10, ": 400 code 22P02"), (11, ": 200 1 rows box_key_hex,device_id,owner_id,registered_at"),
                        (12, ": 200 1 rows box_key_hex,device_id,owner_id,registered_at"), (13, ": 200 0 rows"), (14, ": 403"), (15, ": 403"),
                        (16, ": 403"), (17, ": 201 1 rows"), (18, ": 403"), (19, ": 200 0 rows"), (20, ": 200 0 rows"), (21, ": 200 1 rows"),
                        (22, ": 200 0 rows"), (23, ": 200 1 rows"), (24, ": 403"), (25, ": 403"), (26, ": 201"), (27, ": 200 1 rows"),
                        (28, ": 200 0 rows"), (29, ": 200 0 rows"), (31, ": 200 1 rows"), (32, ": 200 true"), (33, ": 200 false"),
                        (34, ": 404 code PGRST202")]
        for (i, answer) in expected { #expect(postgres[i].contains(answer), "request \(i): \(postgres[i])") }
    }
}
