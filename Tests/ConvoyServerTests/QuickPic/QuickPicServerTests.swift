@testable import ConvoyServer
import ConvoySodium
import ConvoyTime
import ConvoyWire
import Foundation
import Testing

/// `convoy serve --app quickpic` on both stores: the spec's API as docs/quickpic-api.md has it.
@Suite struct QuickPicServerTests {
    @Test(arguments: TestStore.all)
    func friendsExchangeASignedBlobThatIsDeletedOnItsRecipientsAck(_ store: TestStore) async throws {
        let s = try await QuickPicTestServer(store: store)
        let ada = try await s.register("Ada"), bob = try await s.register("bob"), eve = try await s.register("eve")
        #expect(ada.username == "ada", "usernames are lowercased")
        // Bob's pending requests name Ada; Eve cannot accept a request addressed to Bob.
        let asked = try await s.request("POST", "/friends/request", body: ["username": "BOB"], token: ada.token)
        #expect(asked.status == 201 && asked.object["status"] as? String == "pending")
        let requestID = asked.object["id"] as! String
        let pending = try await s.request("GET", "/friends/requests", token: bob.token)
        #expect(pending.rows.count == 1 && pending.rows.first?["from_username"] as? String == "ada")
        #expect(try await s.request("POST", "/friends/accept", body: ["request_id": requestID], token: eve.token).status == 404)
        #expect(try await s.request("POST", "/friends/request", body: ["username": "ada"], token: bob.token).error == "request_exists")
        let accepted = try await s.request("POST", "/friends/accept", body: ["request_id": requestID], token: bob.token)
        #expect(accepted.status == 200 && [ada.id, bob.id].sorted() == [accepted.object["user_a_id"] as? String, accepted.object["user_b_id"] as? String])
        #expect(try await s.request("POST", "/friends/accept", body: ["request_id": requestID], token: bob.token).error == "request_decided")
        #expect(try await s.request("POST", "/friends/request", body: ["username": "bob"], token: ada.token).error == "already_friends")
        let friends = try await s.request("GET", "/friends", token: ada.token)
        #expect(friends.rows.map { $0["username"] as? String } == ["bob"])
        #expect(friends.rows.first?["signing_key"] as? String == bob.signing.publicKey.base64)

        // Two messages, listed oldest first to Bob only, bytes as sent; Eve can neither read nor ACK them.
        var ids: [String] = []
        for content in [[UInt8](repeating: 1, count: 100), [UInt8](repeating: 2, count: 70_000)] {
            let sent = try await s.request("POST", "/messages", body: s.message(from: ada, to: bob.id, content: content, type: "image"), token: ada.token)
            #expect(sent.status == 201, "\(sent.text)")
            ids.append(sent.object["id"] as! String)
            s.clock.advance(by: 0.001)
        }
        let box = try await s.request("GET", "/messages", token: bob.token)
        #expect(box.rows.map { $0["id"] as? String } == ids)
        #expect(box.rows.last?["encrypted_content"] as? String == Data(repeating: 2, count: 70_000).base64EncodedString())
        #expect(box.rows.first?["from_user_id"] as? String == ada.id && box.rows.first?["content_type"] as? String == "image")
        #expect(try await s.request("GET", "/messages?limit=1", token: bob.token).rows.count == 1)
        #expect(try await s.request("GET", "/messages", token: eve.token).rows.isEmpty)
        #expect(try await s.request("GET", "/messages", token: ada.token).rows.isEmpty, "the sender's copy is not in its own mailbox")
        #expect(try await s.request("POST", "/messages/\(ids[0])/ack", token: eve.token).error == "not_found")
        #expect(try await s.request("POST", "/messages/\(ids[0])/ack", token: ada.token).error == "not_found", "only the recipient")
        #expect(try await s.request("POST", "/messages/\(ids[0])/ack", token: bob.token).status == 204)
        #expect(try await s.request("POST", "/messages/\(ids[0])/ack", token: bob.token).error == "not_found", "gone")
        #expect(try await s.request("GET", "/messages", token: bob.token).rows.map { $0["id"] as? String } == [ids[1]])
    }

    @Test(arguments: TestStore.all)
    func messagesOutsideTheRulesAreRefusedWithTheAPIsErrors(_ store: TestStore) async throws {
        let s = try await QuickPicTestServer(store: store)
        let ada = try await s.register(), bob = try await s.register(), eve = try await s.register()
        try await s.befriend(ada, bob)
        let ok = [UInt8]("sealed".utf8)
        func send(_ body: [String: Any], as u: QuickPicTestServer.User) async throws -> QuickPicTestServer.Reply {
            try await s.request("POST", "/messages", body: body, token: u.token)
        }
        // Not a friend and no such user answer alike.
        let stranger = try await send(s.message(from: eve, to: bob.id, content: ok), as: eve)
        let nobody = try await send(s.message(from: ada, to: UUID().uuidString.lowercased(), content: ok), as: ada)
        #expect(stranger.status == 403 && stranger.error == "not_friends" && nobody.text == stranger.text, "\(nobody.text)")
        #expect(try await send(s.message(from: ada, to: ada.id, content: ok), as: ada).error == "not_friends")
        // A blob signed by another key; a sender spoofed.
        #expect(try await send(s.message(from: ada, to: bob.id, content: ok, signer: eve.signing), as: ada).error == "bad_signature")
        var spoofed = s.message(from: eve, to: bob.id, content: ok)
        spoofed["from_user_id"] = ada.id
        #expect(try await send(spoofed, as: eve).error == "forbidden")
        spoofed["from_user_id"] = ada.id.uppercased()
        #expect(try await send(spoofed, as: ada).error == "bad_signature", "its own id (any case) is allowed; the signature is still Eve's")
        // The 5 MiB limit on the decoded content, answered 413 with a clear message.
        let big = try await send(s.message(from: ada, to: bob.id, content: [UInt8](repeating: 7, count: 5 * 1024 * 1024 + 1)), as: ada)
        #expect(big.status == 413 && big.error == "payload_too_large" && big.text.contains("5 MiB"))
        let limit = try await send(s.message(from: ada, to: bob.id, content: [UInt8](repeating: 7, count: 5 * 1024 * 1024)), as: ada)
        #expect(limit.status == 201, "exactly 5 MiB is allowed")
        // Malformed fields, each a 400 that names it.
        var bad = s.message(from: ada, to: bob.id, content: ok)
        bad["content_type"] = "video"
        #expect(try await send(bad, as: ada).text.contains("content_type"))
        bad = s.message(from: ada, to: bob.id, content: ok)
        bad["encrypted_content"] = "not base64!"
        #expect(try await send(bad, as: ada).text.contains("encrypted_content"))
        bad = s.message(from: ada, to: bob.id, content: ok)
        bad["to_user_id"] = "'; DROP TABLE messages; --"
        #expect(try await send(bad, as: ada).status == 400)
        bad.removeValue(forKey: "signature")
        #expect(try await send(bad, as: ada).text.contains("signature: required"))
        #expect(try await s.request("POST", "/messages", raw: Data("{\"to_user_id\":".utf8), token: ada.token).status == 400)
        #expect(try await s.request("POST", "/messages/not-a-uuid/ack", token: bob.token).status == 400)
        #expect(try await s.request("GET", "/messages?limit=0", token: bob.token).status == 400)
        #expect(try await s.request("GET", "/messages?limit=abc", token: bob.token).status == 400)
        // Unknown routes and methods are JSON too, and the server still serves.
        let unknown = try await s.request("GET", "/rest/v1/users")
        #expect(unknown.status == 404 && unknown.error == "not_found")
        #expect(try await s.request("GET", "/health").status == 200)
        #expect(try await s.request("GET", "/messages", token: bob.token).rows.count == 1)
    }

    @Test(arguments: TestStore.all)
    func tokensOtherThanALiveSessionsAreRefused(_ store: TestStore) async throws {
        let s = try await QuickPicTestServer(store: store)
        let ada = try await s.register()
        #expect(try await s.request("GET", "/friends", token: ada.token).status == 200)
        let parts = ada.token.split(separator: ".").map(String.init)
        let none = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        let forged = try JWTForge.hs256(claims: TestServer.claims(ada.token), secret: "not the server's secret at all, 32+ bytes")
        for token in ["", "garbage", "\(none).\(parts[1]).", "\(parts[0]).\(parts[1]).", forged, parts[0] + "." + parts[1] + ".AAAA"] {
            let r = try await s.request("GET", "/friends", token: token)
            #expect(r.status == 401 && r.error == "unauthorized", "\(token.prefix(20))…")
        }
        #expect(try await s.request("GET", "/friends").status == 401)
        // Expired after 15 minutes.
        s.clock.advance(by: 15 * 60 + 1)
        #expect(try await s.request("GET", "/friends", token: ada.token).status == 401)
        let claims = TestServer.claims(ada.token)
        #expect((claims["exp"] as! Int) - (claims["iat"] as! Int) == 900 && claims["iss"] as? String == "quickpic")
    }

    @Test(arguments: TestStore.all)
    func refreshTokensRotateAndAReusedOneEndsItsSession(_ store: TestStore) async throws {
        let s = try await QuickPicTestServer(store: store)
        let ada = try await s.register()
        let first = try await s.request("POST", "/auth/refresh", body: ["refresh_token": ada.refresh])
        #expect(first.status == 200 && first.object["refresh_token"] as? String != ada.refresh)
        let next = first.object["refresh_token"] as! String, token = first.object["access_token"] as! String
        #expect(try await s.request("GET", "/friends", token: token).status == 200)
        // The old token again: refused, and its session (the thief's successor too) is over.
        let reused = try await s.request("POST", "/auth/refresh", body: ["refresh_token": ada.refresh])
        #expect(reused.status == 401 && reused.error == "invalid_refresh_token")
        #expect(try await s.request("POST", "/auth/refresh", body: ["refresh_token": next]).status == 401)
        #expect(try await s.request("GET", "/friends", token: token).status == 401)
        // Logout: a fresh session's access and refresh tokens are refused from then on.
        let login = try await s.request("POST", "/auth/login", body: ["username": ada.username, "password": ada.password])
        let (access, refresh) = (login.object["access_token"] as! String, login.object["refresh_token"] as! String)
        #expect(try await s.request("POST", "/auth/logout", body: ["refresh_token": refresh], token: access).status == 204)
        #expect(try await s.request("GET", "/friends", token: access).status == 401)
        #expect(try await s.request("POST", "/auth/refresh", body: ["refresh_token": refresh]).status == 401)
        // A refresh token expires after 7 days.
        let later = try await s.request("POST", "/auth/login", body: ["username": ada.username, "password": ada.password])
        s.clock.advance(by: 7 * 86_400 + 1)
        #expect(try await s.request("POST", "/auth/refresh", body: ["refresh_token": later.object["refresh_token"] as! String]).status == 401)
    }

    @Test(arguments: TestStore.all)
    func loginsFailAlikeAndAreLimited(_ store: TestStore) async throws {
        let s = try await QuickPicTestServer(store: store)
        let ada = try await s.register()
        let unknown = try await s.request("POST", "/auth/login", body: ["username": "nobody-here", "password": "password-1"])
        let wrong = try await s.request("POST", "/auth/login", body: ["username": ada.username, "password": "wrong-password"])
        #expect(unknown.status == 401 && unknown.body == wrong.body, "an unknown username and a wrong password answer alike: \(unknown.text) \(wrong.text)")
        #expect(try await s.request("POST", "/auth/register", body: ["username": ada.username, "password": "password-2",
                                                                     "public_key": ada.box.publicKey.base64,
                                                                     "signing_key": ada.signing.publicKey.base64]).error == "username_taken")
        for _ in 0..<4 { _ = try await s.request("POST", "/auth/login", body: ["username": ada.username, "password": "wrong-password"]) }
        // Five failures in the window: even the right password waits.
        let limited = try await s.request("POST", "/auth/login", body: ["username": ada.username, "password": ada.password])
        #expect(limited.status == 429 && limited.error == "rate_limited" && Int(limited.headers["retry-after"] ?? "") ?? 0 > 0)
        #expect(try await s.request("POST", "/auth/login", body: ["username": "nobody-here", "password": "x"]).status == 401,
                "another username is not limited")
        s.clock.advance(by: 15 * 60 + 1)
        #expect(try await s.request("POST", "/auth/login", body: ["username": ada.username, "password": ada.password]).status == 200)
    }

    @Test(arguments: TestStore.all)
    func undeliveredMessagesArePurgedAfterSevenDaysAndNotBefore(_ store: TestStore) async throws {
        let s = try await QuickPicTestServer(store: store)
        let ada = try await s.register(), bob = try await s.register()
        try await s.befriend(ada, bob)
        #expect(try await s.request("POST", "/messages", body: s.message(from: ada, to: bob.id, content: [1, 2, 3]), token: ada.token).status == 201)
        s.clock.advance(by: 7 * 86_400 - 1)
        #expect(try await s.server.purgeOnce() == 0)
        let relog = try await s.request("POST", "/auth/login", body: ["username": bob.username, "password": bob.password])
        let token = relog.object["access_token"] as! String
        #expect(try await s.request("GET", "/messages", token: token).rows.count == 1, "7 days less a second: kept")
        s.clock.advance(by: 2)
        #expect(try await s.server.purgeOnce() == 1)
        #expect(try await s.request("GET", "/messages", token: token).rows.isEmpty)
    }

    @Test func aServerToldToKeepAckedMessagesServesThemAgain() async throws {
        let s = try await QuickPicTestServer(store: .sqlite) { $0.quickPicWeaknesses = [.keepAcked] }
        let ada = try await s.register(), bob = try await s.register()
        try await s.befriend(ada, bob)
        let sent = try await s.request("POST", "/messages", body: s.message(from: ada, to: bob.id, content: [9]), token: ada.token)
        let id = sent.object["id"] as! String
        #expect(try await s.request("POST", "/messages/\(id)/ack", token: bob.token).status == 204)
        #expect(try await s.request("GET", "/messages", token: bob.token).rows.map { $0["id"] as? String } == [id])
    }

    @Test func optionsOfTheSupabaseAppsAndWeaknessesOfOthersAreRefused() throws {
        var c = ServerConfiguration.testing
        c.app = "quickpic"
        c.strictPolicies = true
        #expect(throws: ServerConfiguration.Invalid.self) { try c.validate() }
        c = ServerConfiguration.testing
        c.quickPicWeaknesses = [.keepAcked]
        #expect(throws: ServerConfiguration.Invalid.self) { try c.validate() }
        #expect(QuickPicWeakness.parse("keep-acked, ack-any") == .success([.keepAcked, .ackAny]))
        guard case .failure(let e) = QuickPicWeakness.parse("keep-acked,nope") else { Issue.record("nope parsed"); return }
        #expect(e.description.contains("\"nope\"") && e.description.contains("reusable-refresh"))
    }

    @Test func registrationChecksItsFields() async throws {
        let s = try await QuickPicTestServer(store: .sqlite)
        let key = Data(repeating: 1, count: 32).base64EncodedString()
        for (body, field) in [(["username": "ab", "password": "password-1", "public_key": key, "signing_key": key], "username"),
                              (["username": "a b c", "password": "password-1", "public_key": key, "signing_key": key], "username"),
                              (["username": "abc", "password": "short", "public_key": key, "signing_key": key], "password"),
                              (["username": "abc", "password": "password-1", "public_key": "AAAA", "signing_key": key], "public_key"),
                              (["username": "abc", "password": "password-1", "public_key": key], "signing_key")] {
            let r = try await s.request("POST", "/auth/register", body: body)
            #expect(r.status == 400 && r.text.contains(field), "\(r.text)")
        }
        let tooBig = try await s.request("POST", "/auth/register", raw: Data(repeating: 0x20, count: 70_000))
        #expect(tooBig.status == 413)
    }
}
