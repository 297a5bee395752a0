import Foundation
import Testing
@testable import ConvoyServer

/// Row-level security on `storage.objects` as Supabase applies it: with no
/// policy only the service role and signed URLs reach objects; with one — a
/// `StoragePolicy` on SQLite, the same `CREATE POLICY` SQL on PostgreSQL
/// (StorageTestPolicy) — users upload, read, list, sign and delete what it
/// allows, here their own folder, and read their active friends' folders.
@Suite struct ObjectStoragePolicyTests {
    @Test(arguments: TestStore.all) func withoutAPolicyUsersReachNothing(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        try await s.createBucket("media")
        try await s.createBucket("open", public: true)
        try await s.storage("POST", "/object/media/x.jpg", body: Data("secret".utf8), contentType: "image/jpeg").expectOK()
        try await s.storage("POST", "/object/open/y.jpg", body: Data("public".utf8), contentType: "image/jpeg").expectOK()
        let user = try await s.signUp()
        let upload = try await s.storage("POST", "/object/media/\(user.id)/a.jpg", body: Data("a".utf8), token: user.token)
        #expect(upload.isStorageError("403", "AccessDenied") && upload.object["message"] as? String == "new row violates row-level security policy")
        #expect(try await s.storage("POST", "/object/upload/sign/media/a.jpg", token: user.token).isStorageError("403", "AccessDenied"))
        #expect(try await s.storage("GET", "/object/media/x.jpg", token: user.token).isStorageError("404", "NoSuchKey"))
        #expect(try await s.storage("GET", "/object/authenticated/media/x.jpg", token: user.token).isStorageError("404", "NoSuchKey"))
        #expect(try await s.storage("POST", "/object/sign/media/x.jpg", json: ["expiresIn": 60], token: user.token).isStorageError("404", "NoSuchKey"))
        #expect(try await s.storage("POST", "/object/list/media", json: ["prefix": ""], token: user.token).rows.isEmpty)
        #expect(try await s.storage("DELETE", "/object/media", json: ["prefixes": ["x.jpg"]], token: user.token).rows.isEmpty)
        let anon = try await s.storage("GET", "/object/media/x.jpg", token: s.keys.anonKey)
        #expect(anon.isStorageError("404", "NoSuchBucket"), "a private bucket is no bucket to anon")
        #expect(try await s.storage("GET", "/object/public/open/y.jpg", token: .none, apikey: false).body == Data("public".utf8))
        #expect(try await s.storage("GET", "/object/public/media/x.jpg", token: .none, apikey: false).isStorageError("404", "NoSuchBucket"))
        #expect(try await s.storage("GET", "/object/media/x.jpg").body == Data("secret".utf8), "the service role still reads it")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func aPolicyDecidesPerFolderAndMembership(store: TestStore) async throws {
        let policyFolder = try StorageTestPolicy.folder()
        defer { try? FileManager.default.removeItem(atPath: policyFolder) }
        let s = try await TestServer(store: store, app: StoragePolicyApp()) { config in
            if store == .postgres { config.migrationsDirectory = policyFolder }
        }
        try await s.createBucket("op-media")
        let (a, b, c) = (try await s.signUp(), try await s.signUp(), try await s.signUp())
        let mine = "/object/op-media/\(a.id)/photo.jpg"
        #expect(try await s.storage("POST", mine, body: Data("a1".utf8), contentType: "image/jpeg", token: a.token).status == 200)
        let theirs = try await s.storage("POST", "/object/op-media/\(b.id)/photo.jpg", body: Data("x".utf8), token: a.token)
        #expect(theirs.isStorageError("403", "AccessDenied"), "not in someone else's folder")
        #expect(try await s.storage("GET", mine, token: a.token).body == Data("a1".utf8))
        #expect(try await s.storage("POST", mine, body: Data("a2".utf8), contentType: "image/jpeg", token: a.token,
                                    headers: ["x-upsert": "true"]).status == 200, "an upsert: INSERT, SELECT and UPDATE allowed")
        #expect(try await s.storage("GET", mine, token: b.token).isStorageError("404", "NoSuchKey"), "not a friend yet")

        // B becomes A's friend: the policy looks the friendship up.
        let asked = try await s.request("POST", "/rest/v1/friendships", body: ["user_id_1": a.id, "user_id_2": b.id, "requested_by": a.id,
                                                                               "status": "pending", "preference_1": "precise"],
                                        token: a.token, headers: ["Prefer": "return=representation"])
        let friendship = try #require(asked.rows.first?["id"])
        #expect(try await s.request("PATCH", "/rest/v1/friendships?id=eq.\(friendship)", body: ["status": "active", "preference_2": "precise"],
                                    token: b.token).status == 204)
        #expect(try await s.storage("GET", mine, token: b.token).body == Data("a2".utf8), "a friend reads")
        let signed = try await s.storage("POST", "/object/sign/op-media/\(a.id)/photo.jpg", json: ["expiresIn": 30], token: b.token)
        let url = try #require(signed.object["signedURL"] as? String)
        #expect(try await s.storage("GET", url, token: .none, apikey: false).body == Data("a2".utf8))
        #expect(try await s.storage("POST", "/object/list/op-media", json: ["prefix": a.id], token: b.token).rows.count == 1)
        #expect(try await s.storage("GET", mine, token: c.token).isStorageError("404", "NoSuchKey"), "a stranger does not")
        #expect(try await s.storage("POST", "/object/list/op-media", json: ["prefix": a.id], token: c.token).rows.isEmpty)
        let overwrite = try await s.storage("POST", mine, body: Data("b!".utf8), token: b.token, headers: ["x-upsert": "true"])
        #expect(overwrite.isStorageError("403", "AccessDenied"), "a friend reads but does not write")
        #expect(try await s.storage("DELETE", "/object/op-media", json: ["prefixes": ["\(a.id)/photo.jpg"]], token: b.token).rows.isEmpty)

        // Signed upload URLs: allowed where the policy allows the insert, then written as the server.
        #expect(try await s.storage("POST", "/object/upload/sign/op-media/\(b.id)/v.mp4", token: a.token).isStorageError("403", "AccessDenied"))
        let upload = try await s.storage("POST", "/object/upload/sign/op-media/\(a.id)/v.mp4", token: a.token)
        let uploadURL = try #require(upload.object["url"] as? String)
        #expect(TestServer.claims(try #require(upload.object["token"] as? String))["owner"] as? String == a.id)
        #expect(try await s.storage("PUT", uploadURL, body: Data("video".utf8), contentType: "video/mp4", token: .none, apikey: false).status == 200)
        let listed = try await s.storage("POST", "/object/list/op-media", json: ["prefix": a.id], token: a.token)
        #expect(listed.rows.compactMap { $0["name"] as? String } == ["photo.jpg", "v.mp4"])
        let gone = try await s.storage("DELETE", "/object/op-media", json: ["prefixes": ["\(a.id)/photo.jpg", "\(a.id)/v.mp4"]], token: a.token)
        #expect(gone.rows.count == 2 && gone.rows.allSatisfy { $0["owner"] as? String == a.id })
        #expect(s.storedFiles == (0, 0))
        await s.stop()
    }

    @Test func theSQLiteRetentionHookRemovesAFolder() async throws {
        let s = try await TestServer()
        try await s.createBucket("op-media")
        for name in ["op-1/a.jpg", "op-1/b.mp4", "op-2/c.jpg"] {
            try await s.storage("POST", "/object/op-media/\(name)", body: Data(name.utf8)).expectOK()
        }
        let context = try #require(s.server.tables as? SQLiteTables).context
        #expect(try await context.removeObjects(bucket: "op-media", prefix: "op-1/") == 2)
        #expect(try await s.storage("GET", "/object/op-media/op-1/a.jpg").isStorageError("404", "NoSuchKey"))
        #expect(try await s.storage("GET", "/object/op-media/op-2/c.jpg").body == Data("op-2/c.jpg".utf8))
        #expect(s.storedFiles == (1, 0))
        await s.stop()
    }
}
