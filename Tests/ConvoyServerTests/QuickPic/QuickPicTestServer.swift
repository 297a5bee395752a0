import ConvoyTime
import ConvoySodium
import ConvoyWire
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Testing
@testable import ConvoyServer

/// `convoy serve --app quickpic` on a free loopback port, on either store, with a clock tests move by hand.
final class QuickPicTestServer: Sendable {
    let server: QuickPicServer
    let clock: ManualClock
    let url: String
    private let task: Task<Void, any Error>

    init(store: TestStore, _ configure: (inout ServerConfiguration) -> Void = { _ in }) async throws {
        var config = ServerConfiguration.testing
        config.app = QuickPicServer.appName
        config.tokenTTL = QuickPicServer.defaultTokenTTL
        config.retention = QuickPicServer.defaultRetention
        config.bodyLimit = 64 * 1024
        if store == .postgres {
            config.databasePath = try await PostgresTestCluster.freshDatabase()
            config.postgresConnections = 4
        }
        configure(&config)
        let clock = ManualClock(Date())
        var logger = Logger(label: "test.quickpic")
        logger.logLevel = ProcessInfo.processInfo.environment["CONVOY_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        let server = try await QuickPicServer(configuration: config, clock: clock, logger: logger)
        let (stream, continuation) = AsyncStream<ServerKeys>.makeStream()
        task = Task { try await server.run { keys in continuation.yield(keys) } }
        var ready = stream.makeAsyncIterator()
        guard let keys = await ready.next() else { throw CancellationError() }
        (self.server, self.clock, self.url) = (server, clock, keys.url)
    }

    deinit { task.cancel() }

    typealias Reply = TestServer.Reply

    func request(_ method: String, _ path: String, body: Any? = nil, raw: Data? = nil, token: String? = nil,
                 headers: [String: String] = [:]) async throws -> Reply {
        var req = URLRequest(url: URL(string: url + path)!)
        req.httpMethod = method
        if let token { req.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (k, v) in headers { req.setValue(v, forHTTPHeaderField: k) }
        if let body {
            req.httpBody = try JSONSerialization.data(withJSONObject: body)
        } else if let raw {
            req.httpBody = raw
        }
        if req.httpBody != nil { req.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        return try await TestServer.fetch(req)
    }

    /// A registered user with its keys and first session.
    struct User: Sendable {
        let id: String
        let username: String
        let password: String
        let token: String
        let refresh: String
        let box: BoxKeyPair
        let signing: SigningKeyPair
    }

    func register(_ username: String = "u" + UUID().uuidString.prefix(8).lowercased(), password: String = "password-1") async throws -> User {
        let box = try BoxKeyPair(), signing = try SigningKeyPair()
        let r = try await request("POST", "/auth/register", body: ["username": username, "password": password,
                                                                   "public_key": box.publicKey.base64, "signing_key": signing.publicKey.base64])
        try #require(r.status == 201, "register: \(r.status) \(r.text)")
        let user = r.object["user"] as! [String: Any]
        return User(id: user["id"] as! String, username: username.lowercased(), password: password, token: r.object["access_token"] as! String,
                    refresh: r.object["refresh_token"] as! String, box: box, signing: signing)
    }

    /// `a` asks `b`, `b` accepts.
    func befriend(_ a: User, _ b: User) async throws {
        let asked = try await request("POST", "/friends/request", body: ["username": b.username], token: a.token)
        try #require(asked.status == 201, "request: \(asked.text)")
        let accepted = try await request("POST", "/friends/accept", body: ["request_id": asked.object["id"] as! String], token: b.token)
        try #require(accepted.status == 200, "accept: \(accepted.text)")
    }

    /// A message body from `from` to `to`: `content` signed with `signer` (the sender's own key unless given).
    func message(from: User, to: String, content: [UInt8], type: String = "text", signer: SigningKeyPair? = nil) -> [String: Any] {
        ["to_user_id": to, "encrypted_content": Data(content).base64EncodedString(), "content_type": type,
         "signature": Data((signer ?? from.signing).sign(content)).base64EncodedString()]
    }
}

extension TestServer.Reply {
    /// QuickPic's error code (`{"error", "message"}`).
    var error: String? { object["error"] as? String }
}

/// Well-formed HS256 JWTs signed with a secret of the test's choosing (not the server's).
enum JWTForge {
    static func hs256(claims: [String: Any], secret: String) throws -> String {
        func b64url(_ d: some Collection<UInt8>) -> String {
            Data(d).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let head = b64url(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let body = b64url(Array(try JSONSerialization.data(withJSONObject: claims)))
        let signature = try HMACSHA256.authenticate(Array("\(head).\(body)".utf8), key: Array(secret.utf8))
        return "\(head).\(body).\(b64url(signature))"
    }
}
