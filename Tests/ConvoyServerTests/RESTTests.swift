@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

/// PostgREST behaviour and hostile input.
@Suite struct RESTTests {
    func seeded(_ store: TestStore) async throws -> (TestServer, TestServer.User, [TestServer.User]) {
        let s = try await TestServer(store: store)
        let me = try await s.signUp()
        var senders: [TestServer.User] = []
        for i in 0..<3 {
            let u = try await s.signUp()
            senders.append(u)
            let rows = (0..<3).map { k in ["sender_id": u.id, "recipient_id": me.id, "payload": "m\(i)-\(k)"] }
            #expect(try await s.request("POST", "/rest/v1/encrypted_locations", body: rows, token: u.token).status == 201)
            s.clock.advance(by: 1)
        }
        return (s, me, senders)
    }

    @Test(arguments: TestStore.all) func filtersOrderPagingAndCount(store: TestStore) async throws {
        let (s, me, senders) = try await seeded(store)
        func get(_ query: String) async throws -> TestServer.Reply {
            try await s.request("GET", "/rest/v1/encrypted_locations?\(query)", token: me.token, headers: ["Prefer": "count=exact"])
        }
        #expect(try await get("select=payload").rows.count == 9)
        #expect(try await get("sender_id=eq.\(senders[0].id)").rows.count == 3)
        #expect(try await get("sender_id=neq.\(senders[0].id)").rows.count == 6)
        #expect(try await get("sender_id=in.(\(senders[0].id),\(senders[2].id))").rows.count == 6)
        #expect(try await get("sender_id=not.in.(\(senders[0].id),\(senders[2].id))").rows.count == 3)
        #expect(try await get("id=gt.3&id=lte.6").rows.map { $0["id"] as! Int } .sorted() == [4, 5, 6])
        #expect(try await get("payload=is.null").rows.isEmpty)
        let ordered = try await get("select=id&order=id.desc&limit=2&offset=1")
        #expect(ordered.rows.map { $0["id"] as! Int } == [8, 7])
        #expect(ordered.rows.first?.keys.sorted() == ["id"])
        #expect(ordered.headers["content-range"] == "1-2/9")
        let cutoff = Timestamps.format(s.clock.date.addingTimeInterval(-1.5))
            .addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-.:")))!
        let since = try await get("created_at=gte.\(cutoff)")
        #expect(since.rows.count == 3, "timestamps compare as times")
        let none = try await get("id=gt.100")
        #expect(none.rows.isEmpty && none.headers["content-range"] == "*/0")
        let single = try await s.request("GET", "/rest/v1/encrypted_locations?id=eq.1", token: me.token,
                                         headers: ["Accept": "application/vnd.pgrst.object+json"])
        #expect(single.object["id"] as? Int == 1)
        let many = try await s.request("GET", "/rest/v1/encrypted_locations", token: me.token,
                                       headers: ["Accept": "application/vnd.pgrst.object+json"])
        #expect(many.status == 406 && many.code == "PGRST116")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func upsertPatchAndDelete(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp(withProfile: false)
        let first = try await s.request("POST", "/rest/v1/users", body: ["id": a.id, "public_key": "k1"], token: a.token)
        #expect(first.status == 201)
        #expect(try await s.request("POST", "/rest/v1/users", body: ["id": a.id, "public_key": "k2"], token: a.token).status == 409)
        let upsert = try await s.request("POST", "/rest/v1/users?on_conflict=id", body: ["id": a.id, "public_key": "k2", "full_name": "A"],
                                         token: a.token, headers: ["Prefer": "resolution=merge-duplicates,return=representation"])
        #expect(upsert.status == 201 && upsert.rows.first?["public_key"] as? String == "k2")
        let ignore = try await s.request("POST", "/rest/v1/users", body: ["id": a.id, "public_key": "k3"], token: a.token,
                                         headers: ["Prefer": "resolution=ignore-duplicates,return=representation"])
        #expect(ignore.status == 201 && ignore.rows.isEmpty)
        let patched = try await s.request("PATCH", "/rest/v1/users?id=eq.\(a.id)", body: ["avatar_url": "https://x/y.png"], token: a.token)
        #expect(patched.status == 204)
        let row = try await s.request("GET", "/rest/v1/users?id=eq.\(a.id)", token: a.token).rows.first
        #expect(row?["public_key"] as? String == "k2" && row?["avatar_url"] as? String == "https://x/y.png" && row?["full_name"] as? String == "A")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func hostileRequestsGetWellFormedErrors(store: TestStore) async throws {
        let s = try await TestServer(store: store) { $0.bodyLimit = 4096 }
        let a = try await s.signUp()
        let cases: [(String, String, Data?, Int, String)] = [
            ("GET", "/rest/v1/nosuch", nil, 404, "PGRST205"),
            ("GET", "/rest/v1/users?nosuch=eq.1", nil, 400, "42703"),
            ("GET", "/rest/v1/users?select=id;drop%20table%20users", nil, 400, "PGRST100"),
            ("GET", "/rest/v1/users?id=eq.1'%20OR%20'1'='1", nil, 400, "22P02"),
            ("GET", "/rest/v1/users?id=like.x", nil, 400, "PGRST100"),
            ("GET", "/rest/v1/users?order=id.sideways", nil, 400, "PGRST100"),
            ("GET", "/rest/v1/users?limit=-1", nil, 400, "PGRST100"),
            ("GET", "/rest/v1/encrypted_locations?id=eq.abc", nil, 400, "22P02"),
            ("POST", "/rest/v1/users", Data("{not json".utf8), 400, "PGRST102"),
            ("POST", "/rest/v1/users", Data("42".utf8), 400, "PGRST102"),
            ("POST", "/rest/v1/users", Data(#"{"id":"\#(UUID())","public_key":"k","evil":1}"#.utf8), 400, "PGRST204"),
            ("POST", "/rest/v1/users", Data(#"{"id":7,"public_key":"k"}"#.utf8), 400, "22P02"),
            ("POST", "/rest/v1/users", Data(#"{"id":"\#(a.id)","public_key":null}"#.utf8), 400, "23502"),
            ("POST", "/rest/v1/friendships", Data(#"{"user_id_1":"\#(a.id)","user_id_2":"\#(UUID())","requested_by":"\#(a.id)","preference_1":"maybe"}"#.utf8), 400, "23514"),
            ("POST", "/rest/v1/friendships", Data(#"{"user_id_1":"\#(a.id)","user_id_2":"\#(UUID())","requested_by":"\#(a.id)"}"#.utf8), 409, "23503"),
            ("POST", "/rest/v1/encrypted_locations", Data(("[" + String(repeating: #"{"payload":"xxxxxxxx"},"#, count: 300) + "{}]").utf8), 413, "PGRST413"),
        ]
        for (method, path, body, status, code) in cases {
            let r = try await s.request(method, path, rawBody: body, token: a.token)
            #expect(r.status == status && r.code == code, "\(method) \(path): \(r.status) \(String(decoding: r.body, as: UTF8.self))")
            #expect(r.object["message"] is String)
        }
        // Text values are data, never SQL.
        let sneaky = try await s.request("GET", "/rest/v1/users?public_key=eq.x'%20OR%201=1%20--", token: a.token)
        #expect(sneaky.status == 200 && sneaky.rows.isEmpty)
        #expect(try await s.request("GET", "/rest/v1/users", token: a.token).status == 200, "still serving")
        await s.stop()
    }

    /// PostgreSQL's and GoTrue's JSON readers refuse a trailing comma (Foundation's on Linux takes it): nothing is stored.
    @Test(arguments: TestStore.all) func trailingCommasAreRefusedAsPostgRESTAndGoTrueDo(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        let a = try await s.signUp()
        for body in [#"{"id":"\#(a.id)","public_key":"k",}"#, #"[{"id":"\#(a.id)","public_key":"k"},]"#] {
            let r = try await s.request("POST", "/rest/v1/users", rawBody: Data(body.utf8), token: a.token)
            #expect(r.status == 400 && r.code == "PGRST102", "\(body): \(r.status) \(String(decoding: r.body, as: UTF8.self))")
        }
        #expect(try await s.request("GET", "/rest/v1/users?select=id&public_key=eq.k", token: a.token).rows.isEmpty, "nothing was stored")
        let signUp = try await s.request("POST", "/auth/v1/signup", rawBody: Data(#"{"email":"comma@convoy.test","password":"secret123",}"#.utf8))
        #expect(signUp.status == 400 && signUp.object["error_code"] as? String == "bad_json", "\(String(decoding: signUp.body, as: UTF8.self))")
        await s.stop()
    }
}

@Suite struct RetentionTests {
    @Test(arguments: TestStore.all) func purgeDeletesOnlyRowsPastTheWindowAndLogsIt(store: TestStore) async throws {
        let s = try await TestServer(store: store) { $0.retention = 600 }
        let a = try await s.signUp(), b = try await s.signUp()
        func post(_ payload: String) async throws {
            #expect(try await s.request("POST", "/rest/v1/encrypted_locations",
                                        body: ["sender_id": a.id, "recipient_id": b.id, "payload": payload], token: a.token).status == 201)
        }
        try await post("old")
        s.clock.advance(by: 300)
        try await post("young")
        s.clock.advance(by: 299)
        #expect(try await s.server.purgeOnce() == 0, "599 s old: kept")
        s.clock.advance(by: 2)
        #expect(try await s.server.purgeOnce() == 1, "601 s old: purged")
        let left = try await s.request("GET", "/rest/v1/encrypted_locations?select=payload", token: b.token)
        #expect(left.rows.map { $0["payload"] as! String } == ["young"])
        // The purge log: the service role reads it, users do not.
        let log = try await s.request("GET", "/rest/v1/purge_log?order=id.desc&limit=1", token: s.keys.serviceRoleKey,
                                      apikey: .some(s.keys.serviceRoleKey))
        #expect(log.rows.first?["deleted"] as? Int == 1)
        #expect(try await s.request("GET", "/rest/v1/purge_log", token: b.token).rows.isEmpty)
        await s.stop()
    }

    /// Retention 2 s, purge every 500 ms, in compressed time: each "sleep" moves
    /// the clock 500 ms. Rows go at the first purge after they pass 2 s.
    @Test(arguments: TestStore.all) func purgeScheduleInCompressedTime(store: TestStore) async throws {
        let s = try await TestServer(store: store) { $0.retention = 2 }  // its own loop off: this test drives one
        let a = try await s.signUp(), b = try await s.signUp()
        let t0 = s.clock.date
        for payload in ["at-0s", "at-1s"] {
            #expect(try await s.request("POST", "/rest/v1/encrypted_locations",
                                        body: ["sender_id": a.id, "recipient_id": b.id, "payload": payload], token: a.token).status == 201)
            s.clock.advance(by: 1)
        }
        s.clock.advance(by: -2)  // back to t0: the loop starts here
        let ticks = ManualClock(t0)  // counts sleeps
        await s.server.runPurges(every: 0.5) { seconds in
            s.clock.advance(by: seconds)
            ticks.advance(by: 1)
            if ticks.date.timeIntervalSince(t0) > 8 { throw CancellationError() }
        }
        let log = try await s.request("GET", "/rest/v1/purge_log?select=ran_at,deleted&order=id", token: s.keys.serviceRoleKey,
                                      apikey: .some(s.keys.serviceRoleKey)).rows
        #expect(log.count == 8, "a purge every 0.5 s for 4 s")
        let deletedAt = log.filter { ($0["deleted"] as? Int ?? 0) > 0 }.map { row -> Double in
            (Timestamps.parse(row["ran_at"] as! String)!.timeIntervalSince(t0) * 1000).rounded() / 1000
        }
        // Created at 0 s and 1 s, past 2 s at 2.5 s and 3.5 s (the first purge strictly after).
        #expect(deletedAt == [2.5, 3.5], "\(deletedAt)")
        await s.stop()
    }

    @Test func keysFileIsWrittenOwnerOnly() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try ServerKeys(url: "http://127.0.0.1:1", anonKey: "a", serviceRoleKey: "s").write(to: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try ServerKeys.read(from: path).serviceRoleKey == "s")
    }
}

@Suite struct PersistenceTests {
    /// `--database FILE` keeps users and rows across restarts (migrations reopen cleanly).
    @Test func aDatabaseFileSurvivesARestart() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-db-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("convoy.sqlite").path
        let first = try await TestServer { $0.databasePath = path; $0.jwtSecret = "s3cret-for-this-test-only-32-bytes+" }
        let a = try await first.signUp("keep@example.com")
        #expect(try await first.request("POST", "/rest/v1/encrypted_locations",
                                        body: ["sender_id": a.id, "recipient_id": a.id, "payload": "kept"], token: a.token).status == 201)
        await first.stop()

        let second = try await TestServer { $0.databasePath = path; $0.jwtSecret = "s3cret-for-this-test-only-32-bytes+" }
        let signIn = try await second.request("POST", "/auth/v1/token?grant_type=password", body: ["email": "keep@example.com", "password": "secret123"])
        #expect(signIn.status == 200)
        let token = try #require(signIn.object["access_token"] as? String)
        #expect(try await second.request("GET", "/rest/v1/encrypted_locations?select=payload", token: token).rows.first?["payload"] as? String == "kept")
        #expect(try await second.request("GET", "/rest/v1/users", token: a.token).status == 200, "same secret: old tokens still verify")
        #expect(FileManager.default.fileExists(atPath: path), "a file the user named is never removed")
        await second.stop()
    }
}

@Suite struct ConfigurationTests {
    @Test func shortSecretsAndNonsenseAreRefused() async throws {
        var c = ServerConfiguration.testing
        c.jwtSecret = "short"
        #expect(throws: ServerConfiguration.Invalid.self) { try c.validate() }
        c.jwtSecret = String(repeating: "k", count: 32)
        #expect(throws: Never.self) { try c.validate() }
        c.retention = 0
        #expect(throws: ServerConfiguration.Invalid.self) { try c.validate() }
    }
}
