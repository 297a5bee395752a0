import ConvoyServer
import ConvoyWire
import Foundation
import Synchronization
import Testing

/// `SupabaseStorage` against `convoy serve`: media as Survale moves it (signed
/// upload URLs, signed downloads), with bytes, progress and storage-api's errors.
@Suite struct SupabaseStorageTests {
    @Test func mediaGoesUpAndComesBackThroughSignedURLs() async throws {
        let server = try await HTTPEngineTests.server()
        let keys = server.keys
        let engine = try HTTPEngine()
        let http = SupabaseHTTP(engine: engine, target: SupabaseTarget(url: keys.url, anonKey: keys.anonKey),
                                connection: try HTTPConnection(engine: engine))
        let storage = SupabaseStorage(http), service = keys.serviceRoleKey
        try await storage.createBucket("op-media", fileSizeLimit: 5_000_000, allowedMimeTypes: ["image/*", "video/*"], serviceKey: service)

        // A 3 MB photo through a signed upload URL: the upload needs no session.
        let photo = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let signed = try await storage.createSignedUploadURL(bucket: "op-media", path: "op 1/photo (1).jpg", token: service)
        #expect(signed.url.hasPrefix(keys.url + "/storage/v1/object/upload/sign/op-media/op%201/photo%20(1).jpg?token="))
        #expect(!"\(signed)".contains(signed.token), "the token stays out of descriptions")
        let seen = Mutex<[HTTPProgress]>([])
        let up = try await storage.upload(to: signed, bytes: photo, contentType: "image/jpeg") { p in seen.withLock { $0.append(p) } }
        #expect(up.key == "op-media/op 1/photo (1).jpg" && up.bytes == photo.count && up.timing.bytesSent >= photo.count)
        let progress = seen.withLock { $0 }
        #expect(progress.last?.uploaded == photo.count && progress.last?.uploadTotal == photo.count, "progress reaches the whole body")
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.uploaded <= $1.uploaded })

        let url = try await storage.createSignedURL(bucket: "op-media", path: "op 1/photo (1).jpg", expiresIn: 60, token: service)
        let down = try await storage.download(signedURL: url)
        #expect(down.body == photo && down.contentType == "image/jpeg" && down.timing.bytesReceived >= photo.count)

        let video = Array(repeating: UInt8(7), count: 100_000)
        let direct = try await storage.upload(bucket: "op-media", path: "op 1/clip.mp4", bytes: video, contentType: "video/mp4", token: service)
        #expect(direct.key == "op-media/op 1/clip.mp4" && direct.id?.count == 36)
        #expect(try await storage.download(bucket: "op-media", path: "op 1/clip.mp4", token: service).body == video)
        let removed = try await storage.remove(bucket: "op-media", paths: ["op 1/clip.mp4", "op 1/photo (1).jpg"], token: service)
        #expect(Set(removed) == ["op 1/clip.mp4", "op 1/photo (1).jpg"])
        await #expect(throws: SupabaseError.self) { try await storage.download(signedURL: url) }
        do {
            _ = try await storage.download(bucket: "op-media", path: "op 1/clip.mp4", token: service)
            Issue.record("a removed object downloaded")
        } catch {
            #expect(error.status == 400 && error.code == "NoSuchKey" && error.message == "Object not found")
        }
        await server.stop()
        engine.shutdown()
    }

    @Test func refusalsAreStorageAPIErrors() async throws {
        let server = try await HTTPEngineTests.server()
        let keys = server.keys
        let engine = try HTTPEngine()
        let http = SupabaseHTTP(engine: engine, target: SupabaseTarget(url: keys.url, anonKey: keys.anonKey))
        let storage = SupabaseStorage(http)
        try await storage.createBucket("small", fileSizeLimit: 1000, serviceKey: keys.serviceRoleKey)
        let user = try await SupabaseAuth(http).signUp(email: "u@example.com", password: "secret123")
        func code(_ body: () async throws -> Void) async -> String? {
            do {
                try await body()
                return nil
            } catch {
                return (error as? SupabaseError)?.code
            }
        }
        #expect(await code { _ = try await storage.upload(bucket: "small", path: "a.bin", bytes: [1], contentType: "image/png",
                                                          token: user.accessToken) } == "AccessDenied", "no policy: users upload nothing")
        #expect(await code { _ = try await storage.upload(bucket: "small", path: "b.bin", bytes: Array(repeating: 0, count: 1001),
                                                          contentType: "image/png", token: keys.serviceRoleKey) } == "EntityTooLarge")
        #expect(await code { _ = try await storage.upload(bucket: "small", path: "café.bin", bytes: [1], contentType: "image/png",
                                                          token: keys.serviceRoleKey) } == "InvalidKey", "the server's refusal")
        do {
            _ = try await storage.upload(bucket: "small", path: "../c.bin", bytes: [1], contentType: "image/png", token: keys.serviceRoleKey)
            Issue.record("a key with a dot segment was sent")
        } catch {
            #expect(error.kind == .wire(.invalidRequest), "refused before it is sent, as supabase-py does")
        }
        #expect(await code { try await storage.createBucket("small", serviceKey: keys.serviceRoleKey) } == "BucketAlreadyExists")
        await server.stop()
        engine.shutdown()
    }
}
