import Foundation
import Testing
@testable import ConvoyServer

/// Storage against what a hostile client sends: keys that climb out of their
/// bucket, malformed forms, bad tokens. Each gets storage-api's error, nothing
/// is written outside the store's directory, and the server serves on.
@Suite struct ObjectStorageHostileTests {
    @Test(arguments: TestStore.all) func traversalAndBadKeysAre400(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        try await s.createBucket("media")
        let long = String(repeating: "a", count: 1025)
        for path in ["../x.jpg", "%2e%2e/x.jpg", "a/../../x.jpg", "a/%2E%2E/x.jpg", "./x.jpg", "a/./x.jpg", "/abs.jpg", "%2Fabs.jpg",
                     "a//b.jpg", "a%00b.jpg", "a%0Ab.jpg", "a\\b.jpg".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!,
                     "caf%C3%A9.jpg", long, "a/.."] {
            let r = try await s.rawStorage("POST", "/object/media/\(path)", body: "x")
            #expect(r.isStorageError("400", "InvalidKey"), "\(path.prefix(40)): \(r.text)")
            #expect(try await s.rawStorage("GET", "/object/media/\(path)").isStorageError("400", "InvalidKey"), "\(path.prefix(40))")
        }
        let bucket = try await s.storage("POST", "/bucket", json: ["name": "a/b"])
        #expect(bucket.isStorageError("400", "InvalidBucketName"))
        #expect(try await s.storage("POST", "/object/sign/media/..%2Fx", json: ["expiresIn": 60]).isStorageError("400", "InvalidKey"))
        #expect(try await s.rawStorage("POST", "/object/upload/sign/media/../x").isStorageError("400", "InvalidKey"))
        #expect(s.storedFiles == (0, 0))
        let root = s.server.objects.files.root
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() == ["objects", "tmp"], "nothing beside the store")
        #expect(!FileManager.default.fileExists(atPath: root.deletingLastPathComponent().appendingPathComponent("x.jpg").path))
        // Names that look odd but are valid keys for storage-api.
        for name in ["a b (1).jpg", "op-1/2026-01-05 08:00:00.jpg", "..hidden", "a/.b", "x..y"] {
            let path = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!
            #expect(try await s.storage("POST", "/object/media/\(path)", body: Data("ok".utf8)).status == 200, "\(name)")
            #expect(try await s.storage("GET", "/object/media/\(path)").body == Data("ok".utf8), "\(name)")
        }
        await s.stop()
    }

    @Test(arguments: TestStore.all) func hostileFormsAndBodiesGetWellFormedErrors(store: TestStore) async throws {
        let s = try await TestServer(store: store)
        try await s.createBucket("media")
        let b = Multipart.boundary
        let cases: [(String, Data, String)] = [
            ("no boundary", Data("--x\r\n\r\nhello".utf8), "multipart/form-data"),
            ("empty boundary", Data("--\r\n".utf8), "multipart/form-data; boundary="),
            ("fields, no file", Data("--\(b)\r\nContent-Disposition: form-data; name=\"cacheControl\"\r\n\r\n3600\r\n--\(b)--\r\n".utf8),
             Multipart.contentType),
            ("cut short", Data("--\(b)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.jpg\"\r\n\r\nhalf a fi".utf8),
             Multipart.contentType),
            ("garbage", Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) }), Multipart.contentType),
            ("bad header", Data("--\(b)\r\nContent Disposition: x\r\n\r\n".utf8), Multipart.contentType),
            ("nothing", Data(), Multipart.contentType),
            ("header flood", Data(("--\(b)\r\n" + String(repeating: "X-Pad: \(String(repeating: "p", count: 1000))\r\n", count: 1100)).utf8),
             Multipart.contentType),
            ("field flood", Data(("--\(b)\r\nContent-Disposition: form-data; name=\"pad\"\r\n\r\n" + String(repeating: "q", count: 1_100_000)).utf8),
             Multipart.contentType),
        ]
        for (what, body, type) in cases {
            let r = try await s.storage("POST", "/object/media/\(what.replacingOccurrences(of: " ", with: "-")).jpg", body: body, contentType: type)
            #expect(r.isStorageError("400", "InvalidRequest"), "\(what): \(r.status) \(r.text.prefix(200))")
        }
        // A second file in the form is ignored (fastify-multipart's files: 1); the first is the object.
        var two = Multipart.form(file: Data("first".utf8))
        two.removeLast("--\r\n".utf8.count)
        two += Data("\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.jpg\"\r\n\r\nsecond\r\n--\(b)--\r\n".utf8)
        #expect(try await s.storage("POST", "/object/media/two.jpg", body: two, contentType: Multipart.contentType).status == 200)
        #expect(try await s.storage("GET", "/object/media/two.jpg").body == Data("first".utf8))
        let json = try await s.storage("POST", "/object/sign/media/two.jpg", body: Data("{not json".utf8), contentType: "application/json")
        #expect(json.isStorageError("400", "InvalidRequest"))
        #expect(try await s.storage("DELETE", "/object/media", json: ["prefixes": []]).isStorageError("400", "InvalidRequest"))
        #expect(try await s.storage("DELETE", "/object/media", json: ["prefixes": [1]]).isStorageError("400", "InvalidRequest"))
        let badToken = try await s.storage("POST", "/object/media/t.jpg", body: Data("x".utf8), token: "e30.e30.sig")
        #expect(badToken.isStorageError("403", "AccessDenied"))
        let route = try await s.storage("GET", "/nothing/here")
        #expect(route.status == 404 && route.object["statusCode"] as? String == "404")
        #expect(try await s.storage("POST", "/object/move", json: [:]).status == 404, "a storage-api route not served here")
        #expect(s.storedFiles == (1, 0), "no half-written upload is left")
        #expect(try await s.storage("GET", "/bucket/media").status == 200, "the server serves on")
        await s.stop()
    }
}
