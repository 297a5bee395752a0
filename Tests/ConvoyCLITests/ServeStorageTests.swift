import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ConvoyTestSupport

/// `convoy serve`'s Storage flags, as a user runs them: `--storage-dir` keeps
/// object bytes where it says (and after exit), `--storage-file-limit` caps an
/// upload, and a size that does not read is bad input.
@Suite(.timeLimit(.minutes(3)))
struct ServeStorageTests {
    @Test func aSizeThatDoesNotReadIsBadInput() throws {
        for size in ["lots", "0", "600GB", "-1MB", "1.5.2MB"] {
            let r = try CLI.run("serve", "--port", "0", "--storage-file-limit", size)
            #expect(r.status == 2 && r.stdout.isEmpty, "\(size): \(r.stderr)")
        }
    }

    @Test func storageDirAndFileLimitTakeEffect() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keysPath = dir.appendingPathComponent("keys.json").path, objects = dir.appendingPathComponent("media")
        let process = TestProcess()
        process.executableURL = CLI.binary
        process.arguments = ["serve", "--port", "0", "--keys-file", keysPath, "--purge-every", "0",
                             "--storage-dir", objects.path, "--storage-file-limit", "1KB"]
        process.standardOutput = Pipe()
        let err = Pipe()
        process.standardError = err
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: keysPath), ContinuousClock.now < deadline, process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        let keys = try #require(try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: keysPath))) as? [String: String])
        let (url, service) = (try #require(keys["url"]), try #require(keys["service_role_key"]))
        func send(_ method: String, _ path: String, _ body: Data, type: String) async throws -> (Int, [String: Any]) {
            var request = URLRequest(url: URL(string: url + "/storage/v1" + path)!)
            request.httpMethod = method
            request.setValue(keys["anon_key"], forHTTPHeaderField: "apikey")
            request.setValue("Bearer \(service)", forHTTPHeaderField: "Authorization")
            request.setValue(type, forHTTPHeaderField: "Content-Type")
            request.httpBody = body
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
        }
        #expect(try await send("POST", "/bucket", Data(#"{"name":"media"}"#.utf8), type: "application/json").0 == 200)
        #expect(try await send("POST", "/object/media/a.bin", Data(count: 1000), type: "application/octet-stream").0 == 200)
        let (status, body) = try await send("POST", "/object/media/b.bin", Data(count: 1001), type: "application/octet-stream")
        #expect(status == 400 && body["statusCode"] as? String == "413" && body["code"] as? String == "EntityTooLarge")

        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                "\(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")
        let kept = try FileManager.default.contentsOfDirectory(atPath: objects.appendingPathComponent("objects").path)
        #expect(kept.count == 1, "the object's bytes stay in --storage-dir after exit")
        #expect((try? FileManager.default.attributesOfItem(atPath: objects.appendingPathComponent("objects/\(kept[0])").path)[.size]
                 as? Int) == 1000)
    }
}
