@testable import ConvoyServer
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

/// Storage (`/storage/v1`) on both stores, as storage-api answers: buckets,
/// uploads, downloads, signed URLs in and out of time, size limits, removal.
@Suite struct ObjectStorageTests {
    static let photo = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    @Test(arguments: TestStore.all) func bucketsAreTheServiceRolesAndObjectsRoundTrip(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        try await s.createBucket("media", limit: "1MB", types: ["image/*", "video/mp4", "text/plain"])
        let again = try await s.storage("POST", "/bucket", json: ["name": "media"])
        #expect(again.isStorageError("409", "BucketAlreadyExists"), "\(again.text)")
        let bucket = try await s.storage("GET", "/bucket/media")
        #expect(bucket.object["file_size_limit"] as? Int == 1_000_000 && bucket.object["public"] as? Bool == false
                    && bucket.object["allowed_mime_types"] as? [String] == ["image/*", "video/mp4", "text/plain"])
        #expect(try await s.storage("GET", "/bucket").rows.map { $0["id"] as? String } == ["media"])
        let user = try await s.signUp()
        #expect(try await s.storage("GET", "/bucket", token: user.token).rows.isEmpty, "buckets have RLS and no policy")
        #expect(try await s.storage("GET", "/bucket/media", token: user.token).isStorageError("404", "NoSuchBucket"))
        let denied = try await s.storage("POST", "/bucket", json: ["name": "mine"], token: user.token)
        #expect(denied.isStorageError("403", "AccessDenied") && denied.object["message"] as? String == "new row violates row-level security policy")

        let up = try await s.storage("POST", "/object/media/op-1/photo.jpg", body: Self.photo, contentType: "image/jpeg",
                                     headers: ["Cache-Control": "max-age=60"])
        #expect(up.status == 200 && up.object["Key"] as? String == "media/op-1/photo.jpg" && (up.object["Id"] as? String)?.count == 36)
        for path in ["/object/media/op-1/photo.jpg", "/object/authenticated/media/op-1/photo.jpg"] {
            let down = try await s.storage("GET", path)
            #expect(down.status == 200 && down.body == Self.photo && down.headers["content-type"] == "image/jpeg"
                        && down.headers["content-length"] == "\(Self.photo.count)" && down.headers["cache-control"] == "max-age=60")
        }
        let duplicate = try await s.storage("POST", "/object/media/op-1/photo.jpg", body: Data("x".utf8), contentType: "image/jpeg")
        #expect(duplicate.isStorageError("409", "ResourceAlreadyExists") && duplicate.object["error"] as? String == "Duplicate")
        let upsert = try await s.storage("POST", "/object/media/op-1/photo.jpg", body: Data("v2".utf8), contentType: "image/jpeg",
                                         headers: ["x-upsert": "true"])
        #expect(upsert.status == 200 && upsert.object["Id"] as? String == up.object["Id"] as? String, "an upsert keeps the row")
        let put = try await s.storage("PUT", "/object/media/op-1/photo.jpg", body: Data("v3".utf8), contentType: "image/png")
        #expect(put.status == 200)
        #expect(try await s.storage("GET", "/object/media/op-1/photo.jpg").body == Data("v3".utf8))
        #expect(s.storedFiles == (1, 0), "replaced versions are unlinked")
        let missing = try await s.storage("GET", "/object/media/op-1/none.jpg")
        #expect(missing.isStorageError("404", "NoSuchKey") && missing.object["error"] as? String == "not_found")
        #expect(try await s.storage("GET", "/object/nobucket/x.jpg").isStorageError("404", "NoSuchBucket"))
        let type = try await s.storage("POST", "/object/media/doc.pdf", body: Data("%PDF".utf8), contentType: "application/pdf")
        #expect(type.isStorageError("415", "InvalidMimeType"))

        try await s.storage("POST", "/object/media/op-1/b.txt", body: Data("b".utf8), contentType: "text/plain").expectOK()
        try await s.storage("POST", "/object/media/op-2/c.txt", body: Data("c".utf8), contentType: "text/plain").expectOK()
        try await s.storage("POST", "/object/media/top.txt", body: Data("t".utf8), contentType: "text/plain").expectOK()
        let root = try await s.storage("POST", "/object/list/media", json: ["prefix": "", "limit": 100, "offset": 0,
                                                                           "sortBy": ["column": "name", "order": "asc"]])
        #expect(root.rows.map { $0["name"] as? String } == ["op-1", "op-2", "top.txt"])
        #expect(root.rows[0]["id"] is NSNull && (root.rows[2]["metadata"] as? [String: Any])?["size"] as? Int == 1)
        let folder = try await s.storage("POST", "/object/list/media", json: ["prefix": "op-1", "limit": 1, "offset": 1])
        #expect(folder.rows.map { $0["name"] as? String } == ["photo.jpg"])

        let removed = try await s.storage("DELETE", "/object/media", json: ["prefixes": ["op-1/photo.jpg", "op-1/b.txt", "op-1/none"]])
        #expect(removed.status == 200 && Set(removed.rows.compactMap { $0["name"] as? String }) == ["op-1/photo.jpg", "op-1/b.txt"])
        #expect(try await s.storage("GET", "/object/media/op-1/photo.jpg").isStorageError("404", "NoSuchKey"))
        #expect(s.storedFiles == (2, 0), "removed objects' bytes are gone")
        #expect(try await s.server.removeObjects(bucket: "media", names: ["op-2/c.txt"]) == 1, "the retention hook")
        #expect(s.storedFiles == (1, 0))
        await s.stop()
    }

    @Test(arguments: TestStore.all) func multipartAsSupabaseClientsSendIt(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        try await s.createBucket("media")
        let form = Multipart.form(fields: [("cacheControl", "3600"), ("metadata", "{\"a\":1}")], file: Self.photo)
        let up = try await s.storage("POST", "/object/media/op-1/p.jpg", body: form, contentType: Multipart.contentType,
                                     headers: ["x-upsert": "false"])
        #expect(up.status == 200, "\(up.text)")
        let down = try await s.storage("GET", "/object/media/op-1/p.jpg")
        #expect(down.body == Self.photo && down.headers["content-type"] == "image/jpeg" && down.headers["cache-control"] == "max-age=3600")
        let listed = try await s.storage("POST", "/object/list/media", json: ["prefix": "op-1"]).rows.first?["metadata"] as? [String: Any]
        #expect(listed?["size"] as? Int == Self.photo.count && listed?["mimetype"] as? String == "image/jpeg")
        await s.stop()
    }

    @Test(arguments: TestStore.all) func signedURLsHoldTheirPathScopeAndTime(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        try await s.createBucket("media")
        try await s.storage("POST", "/object/media/a/photo.jpg", body: Self.photo, contentType: "image/jpeg").expectOK()
        // supabase-py sends expiresIn as a string.
        let signed = try await s.storage("POST", "/object/sign/media/a/photo.jpg", json: ["expiresIn": "60"])
        let url = try #require(signed.object["signedURL"] as? String)
        #expect(url.hasPrefix("/object/sign/media/a/photo.jpg?token="))
        let token = String(url.split(separator: "=", maxSplits: 1)[1])
        let claims = TestServer.claims(token)
        #expect(claims["url"] as? String == "media/a/photo.jpg" && claims["scope"] as? String == "download"
                    && (claims["exp"] as? Int).map { $0 - (claims["iat"] as? Int ?? 0) } == 60)
        let open = try await s.storage("GET", url, token: .none, apikey: false)
        #expect(open.status == 200 && open.body == Self.photo, "a signed URL needs no key")
        #expect(try await s.storage("POST", "/object/sign/media/a/none.jpg", json: ["expiresIn": 60]).isStorageError("404", "NoSuchKey"))
        #expect(try await s.storage("POST", "/object/sign/media/a/photo.jpg", json: ["expiresIn": 0]).isStorageError("400", "InvalidParameter"))
        #expect(try await s.storage("POST", "/object/sign/media/a/photo.jpg", json: [:]).isStorageError("400", "InvalidRequest"))

        let other = try await s.storage("GET", "/object/sign/media/a/other.jpg?token=\(token)", token: .none, apikey: false)
        #expect(other.isStorageError("400", "InvalidSignature"), "a token is for its own path")
        var forged = Array(token.utf8)
        forged[forged.count - 3] = forged[forged.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let bad = try await s.storage("GET", "/object/sign/media/a/photo.jpg?token=\(String(decoding: forged, as: UTF8.self))", token: .none)
        #expect(bad.isStorageError("400", "InvalidJWT") && bad.object["message"] as? String == "signature verification failed")
        let junk = try await s.storage("GET", "/object/sign/media/a/photo.jpg?token=not-a-jwt", token: .none)
        #expect(junk.isStorageError("400", "InvalidJWT"))
        let asUpload = try await s.storage("PUT", "/object/upload/sign/media/a/photo.jpg?token=\(token)", body: Data("x".utf8), token: .none)
        #expect(asUpload.isStorageError("400", "InvalidSignature") && asUpload.object["message"] as? String == "Token is not scoped for upload")

        s.clock.advance(by: 61)
        let expired = try await s.storage("GET", url, token: .none, apikey: false)
        #expect(expired.isStorageError("400", "InvalidJWT") && expired.object["message"] as? String == "\"exp\" claim timestamp check failed")

        let upload = try await s.storage("POST", "/object/upload/sign/media/a/video.mp4", headers: ["x-upsert": "false"])
        let uploadURL = try #require(upload.object["url"] as? String), uploadToken = try #require(upload.object["token"] as? String)
        #expect(uploadURL == "/object/upload/sign/media/a/video.mp4?token=\(uploadToken)")
        let uploadClaims = TestServer.claims(uploadToken)
        #expect(uploadClaims["scope"] as? String == "upload" && uploadClaims["upsert"] as? Bool == false && uploadClaims["owner"] == nil
                    && uploadClaims["url"] as? String == "media/a/video.mp4")
        let put = try await s.storage("PUT", uploadURL, body: Multipart.form(filename: "video.mp4", type: "video/mp4", file: Self.photo),
                                      contentType: Multipart.contentType, token: .none, apikey: false)
        #expect(put.status == 200 && put.object["Key"] as? String == "media/a/video.mp4", "\(put.text)")
        #expect(try await s.storage("GET", "/object/media/a/video.mp4").headers["content-type"] == "video/mp4")
        let twice = try await s.storage("PUT", uploadURL, body: Data("y".utf8), token: .none, apikey: false)
        #expect(twice.isStorageError("409", "ResourceAlreadyExists"), "an upload token without upsert writes once")
        let download = try await s.storage("GET", "/object/sign/media/a/video.mp4?token=\(uploadToken)", token: .none)
        #expect(download.isStorageError("400", "InvalidSignature"), "an upload token does not download")
        s.clock.advance(by: Double(SignedURLs.uploadLifetime))
        let late = try await s.storage("PUT", uploadURL, body: Data("z".utf8), token: .none, apikey: false)
        #expect(late.isStorageError("400", "InvalidJWT"))
        #expect(s.storedFiles == (2, 0))
        await s.stop()
    }

    @Test(arguments: TestStore.all) func uploadsOverTheLimitAre413AndTheServerServesOn(store: TestStore) async throws {
        let s = try await TestServer(store: store) { $0.objectSizeLimit = 4000 }
        try await s.createBucket("small", limit: 1000)
        try await s.createBucket("capped")
        let exact = try await s.storage("POST", "/object/small/a.bin", body: Data(count: 1000))
        #expect(exact.status == 200)
        let over = try await s.storage("POST", "/object/small/b.bin", body: Data(count: 1001))
        #expect(over.isStorageError("413", "EntityTooLarge") && over.object["error"] as? String == "Payload too large")
        let form = try await s.storage("POST", "/object/small/c.bin", body: Multipart.form(file: Data(count: 1001)),
                                       contentType: Multipart.contentType)
        #expect(form.isStorageError("413", "EntityTooLarge"), "\(form.text)")
        let cap = try await s.storage("POST", "/object/capped/d.bin", body: Data(count: 4001))
        #expect(cap.isStorageError("413", "EntityTooLarge"), "the global cap holds where the bucket has no limit")
        // Declared larger than the limit and still coming: refused at once, the connection closed.
        let client = try RawClient(s.keys.url)
        _ = client.send("POST /storage/v1/object/small/e.bin HTTP/1.1\r\nHost: x\r\napikey: \(s.keys.anonKey)\r\n"
                        + "Authorization: Bearer \(s.keys.serviceRoleKey)\r\nContent-Length: 50000000\r\n\r\n" + String(repeating: "x", count: 1000))
        let answer = await client.readText(within: 10)
        #expect(answer.text.hasPrefix("HTTP/1.1 400") && answer.text.contains("\"statusCode\":\"413\"") && answer.closed,
                "\(answer.text.prefix(300))")
        // Chunked, no length: cut off once over the limit.
        let chunked = try RawClient(s.keys.url)
        _ = chunked.send("POST /storage/v1/object/small/f.bin HTTP/1.1\r\nHost: x\r\napikey: \(s.keys.anonKey)\r\n"
                         + "Authorization: Bearer \(s.keys.serviceRoleKey)\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + "800\r\n" + String(repeating: "y", count: 2048) + "\r\n")
        let cut = await chunked.readText(within: 10)
        #expect(cut.text.hasPrefix("HTTP/1.1 400") && cut.text.contains("EntityTooLarge") && cut.closed, "\(cut.text.prefix(300))")
        #expect(try await s.storage("GET", "/object/small/a.bin").body == Data(count: 1000), "the server serves on")
        #expect(s.storedFiles == (1, 0), "refused uploads leave nothing behind")
        await s.stop()
    }
}

extension TestServer.Reply {
    func expectOK(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status == 200, "\(text)", sourceLocation: sourceLocation)
    }
}
