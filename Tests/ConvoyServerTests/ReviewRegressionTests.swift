@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

/// Hostile requests found by review; each once crashed the server, broke it
/// for everyone, or was read wrongly.
@Suite struct ReviewRegressionTests {
    @Test(arguments: TestStore.all) func absurdTimestampsAreBadValuesNotACrash(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp()
        for value in ["300000-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "-5000-01-01T00:00:00Z"] {
            let r = try await s.request("GET", "/rest/v1/users?created_at=lt.\(value)", token: a.token)
            // A time either store cannot read is timestamptz_in's 22007 (years past 9999: the known difference, docs/server.md).
            #expect(r.status == 400 && r.code == "22007", "\(value): \(r.status) \(String(decoding: r.body, as: UTF8.self))")
        }
        #expect(try await s.request("GET", "/rest/v1/users", token: a.token).status == 200, "still serving")
        #expect(Timestamps.format(Date(timeIntervalSince1970: -1.5)) == "1969-12-31T23:59:58.500000+00:00")
        #expect(Timestamps.format(Date(timeIntervalSince1970: 1e15)).hasPrefix("9999-12-31T23:59:59"))
    }

    @Test(arguments: TestStore.all) func usersCannotChooseIdsOrCreationTimes(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let pinned = try await s.request("POST", "/rest/v1/encrypted_locations",
                                         body: ["id": "9223372036854775807", "sender_id": a.id, "recipient_id": b.id, "payload": "x"], token: a.token)
        #expect(pinned.status == 400 && pinned.code == "428C9")
        let old = try await s.request("POST", "/rest/v1/encrypted_locations",
                                      body: ["sender_id": a.id, "recipient_id": b.id, "payload": "x", "created_at": "9999-12-31T23:59:59Z"],
                                      token: a.token)
        #expect(old.status == 201)
        let stored = try await s.request("GET", "/rest/v1/encrypted_locations?payload=eq.x", token: b.token)
        // The same instant (PostgreSQL writes it with fewer digits when they are zeros).
        let text = try #require(stored.rows.first?["created_at"] as? String)
        let stamped = try #require(Timestamps.parse(text))
        #expect(abs(stamped.timeIntervalSince(s.clock.date)) < 1e-5, "server-stamped")
        #expect(try await s.request("POST", "/rest/v1/encrypted_locations", body: ["sender_id": b.id, "recipient_id": a.id, "payload": "y"],
                                    token: b.token).status == 201, "inserts still work for everyone")
        let invite = try await s.request("POST", "/rest/v1/rpc/create_invite", body: [String: Any](), token: a.token)
        let f = try await s.request("POST", "/rest/v1/rpc/accept_invite", body: ["code": invite.object["code"]!], token: b.token)
        let renumber = try await s.request("PATCH", "/rest/v1/friendships?id=eq.\(f.object["id"]!)", body: ["id": 777], token: a.token)
        #expect(renumber.status == 400 && renumber.code == "428C9")
        // The service role may set them (migrations, fixtures).
        let service = try await s.request("POST", "/rest/v1/encrypted_locations",
                                          body: ["sender_id": a.id, "recipient_id": b.id, "payload": "z", "created_at": "2020-01-01T00:00:00Z"],
                                          token: s.keys.serviceRoleKey, apikey: .some(s.keys.serviceRoleKey), headers: ["Prefer": "return=representation"])
        #expect((service.rows.first?["created_at"] as? String).flatMap { Timestamps.parse($0) } == Timestamps.parse("2020-01-01T00:00:00Z"))
        await s.stop()
    }

    @Test(arguments: TestStore.all) func theRequesterCannotSetTheInviteesPreference(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let r = try await s.request("POST", "/rest/v1/friendships",
                                    body: ["user_id_1": a.id, "user_id_2": b.id, "requested_by": a.id, "preference_2": "precise"], token: a.token)
        #expect(r.status == 403 && r.code == "42501")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func bodiesAreReadStrictly(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp()
        #expect(try await s.request("POST", "/rest/v1/rpc/create_invite", rawBody: Data("garbage".utf8), token: a.token).status == 400)
        #expect(try await s.request("POST", "/rest/v1/rpc/create_invite", rawBody: Data("[1]".utf8), token: a.token).status == 400)
        let numeric = try await s.request("POST", "/auth/v1/signup", body: ["email": 123, "password": "secret123"])
        #expect(numeric.status == 400, "not an anonymous user")
        // JSON 1 and 0 are numbers, true is not.
        let service = (token: s.keys.serviceRoleKey, key: String??.some(s.keys.serviceRoleKey))
        let one = try await s.request("GET", "/rest/v1/purge_log?id=eq.1", token: service.token, apikey: service.key)
        #expect(one.status == 200)
        let bool = try await s.request("POST", "/rest/v1/purge_log", body: ["ran_at": "2020-01-01T00:00:00Z", "deleted": true, "cutoff": "2020-01-01T00:00:00Z"],
                                       token: service.token, apikey: service.key)
        #expect(bool.status == 400 && bool.code == "22P02")
        let number = try await s.request("POST", "/rest/v1/purge_log", body: ["ran_at": "2020-01-01T00:00:00Z", "deleted": 1, "cutoff": "2020-01-01T00:00:00Z"],
                                         token: service.token, apikey: service.key)
        #expect(number.status == 201)
        await s.stop()
    }

    @Test(arguments: TestStore.all) func headCountsWithoutABody(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp()
        _ = try await s.signUp()
        let r = try await s.request("HEAD", "/rest/v1/users?select=id", token: a.token, headers: ["Prefer": "count=exact"])
        #expect(r.status == 200 && r.body.isEmpty)
        #expect(r.headers["content-range"] == "0-1/2")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func largeFramesAndUppercaseFiltersWork(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let client = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
        let upper = [["event": "INSERT", "schema": "public", "table": "encrypted_locations", "filter": "recipient_id=eq.\(b.id.uppercased())"]]
        _ = try await client.join("realtime:upper", token: b.token, changes: upper, broadcastSelf: true)
        _ = try await s.request("POST", "/rest/v1/encrypted_locations", body: ["sender_id": a.id, "recipient_id": b.id, "payload": "p"], token: a.token)
        _ = try await client.next(topic: "realtime:upper", event: "postgres_changes")
        // A 40 KB broadcast (the websocket default frame limit is 16 KB).
        let big = String(repeating: "x", count: 40_000)
        client.send("realtime:upper", "broadcast", ["type": "broadcast", "event": "big", "payload": ["blob": big]])
        let echoed = try await client.next(topic: "realtime:upper", event: "broadcast")
        #expect((((echoed["payload"] as? [String: Any])?["payload"] as? [String: Any])?["blob"] as? String)?.count == 40_000)
        await s.stop()
    }
}

/// As PostgreSQL checks the SELECT policy for `INSERT … RETURNING`.
@Suite struct ReturningTests {
    @Test(arguments: TestStore.all) func representationNeedsTheSelectPolicy(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let body: [String: Any] = ["sender_id": a.id, "recipient_id": b.id, "payload": "p"]
        let minimal = try await s.request("POST", "/rest/v1/encrypted_locations", body: body, token: a.token)
        #expect(minimal.status == 201)
        let representation = try await s.request("POST", "/rest/v1/encrypted_locations", body: body, token: a.token,
                                                 headers: ["Prefer": "return=representation"])
        #expect(representation.status == 403 && representation.code == "42501")
        #expect(try await s.request("GET", "/rest/v1/encrypted_locations", token: b.token).rows.count == 1, "and nothing was written")
        await s.stop()
    }

    /// The read-back is one of the insert's checks, and they come before the row's constraints: a row its sender may
    /// not read back is 403 even when it also lacks a NOT NULL column or names no user (SQLite answered 400 and 409).
    /// Without `return=representation` the constraint is the answer: the control. An upsert's proposed row meets NOT
    /// NULL before ON CONFLICT finds its key (SQLite merged it into the existing row).
    @Test(arguments: TestStore.all) func theReadBackComesBeforeTheRowsConstraints(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let noPayload: [String: Any] = ["sender_id": a.id, "recipient_id": b.id]
        let noOne: [String: Any] = ["sender_id": a.id, "recipient_id": UUID().uuidString.lowercased(), "payload": "p"]
        for (body, status, code) in [(noPayload, 400, "23502"), (noOne, 409, "23503")] {
            let minimal = try await s.request("POST", "/rest/v1/encrypted_locations", body: body, token: a.token)
            #expect(minimal.status == status && minimal.code == code, "\(body): \(minimal.status) \(String(decoding: minimal.body, as: UTF8.self))")
            let representation = try await s.request("POST", "/rest/v1/encrypted_locations", body: body, token: a.token,
                                                     headers: ["Prefer": "return=representation"])
            #expect(representation.status == 403 && representation.code == "42501",
                    "\(body): \(representation.status) \(String(decoding: representation.body, as: UTF8.self))")
        }
        let keyOnly = try await s.request("POST", "/rest/v1/users?on_conflict=id", body: ["id": a.id], token: a.token,
                                          headers: ["Prefer": "resolution=merge-duplicates"])
        #expect(keyOnly.status == 400 && keyOnly.code == "23502", "\(keyOnly.status) \(String(decoding: keyOnly.body, as: UTF8.self))")
        let whole = try await s.request("POST", "/rest/v1/users?on_conflict=id", body: ["id": a.id, "public_key": "k2"], token: a.token,
                                        headers: ["Prefer": "resolution=merge-duplicates"])
        #expect(whole.status == 201, "\(whole.status) \(String(decoding: whole.body, as: UTF8.self))")
        await s.stop()
    }
}

@Suite struct UpsertPolicyTests {
    /// The INSERT policy comes first, so an upsert never tells a user whether a key exists.
    @Test(arguments: TestStore.all) func upsertsDoNotRevealExistingKeys(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(), b = try await s.signUp()
        let code = try #require(try await s.request("POST", "/rest/v1/rpc/create_invite", body: [String: Any](), token: a.token).object["code"] as? String)
        for probe in [code, "NOSUCH99"] {
            let r = try await s.request("POST", "/rest/v1/invites?on_conflict=code", body: ["code": probe, "inviter_id": b.id, "preference": "precise",
                                                                                         "expires_at": "2030-01-01T00:00:00Z"],
                                        token: b.token, headers: ["Prefer": "resolution=ignore-duplicates"])
            #expect(r.status == 403 && r.code == "42501", "\(probe)")
        }
        await s.stop()
    }
}
