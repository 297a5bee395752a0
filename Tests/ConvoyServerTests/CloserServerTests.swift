import ConvoyTime
import ConvoyWire
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Testing
@testable import ConvoyServer

/// `convoy serve --app closer`: Firebase Auth's REST shapes, the pairing callables (a couple made once, its
/// wrapped key handed over), the accept limit (the 11th attempt in an hour refused with RESOURCE_EXHAUSTED and
/// Retry-After, the window rolling on the test's clock), the 24 h TTL, one answer for unknown, used and expired
/// codes, Firestore's rules for the documents pairing touches, and bad input answered in the callable shape.
@Suite struct CloserServerTests {
    final class Harness: Sendable {
        let clock = ManualClock(Date())
        let url: String
        let task: Task<Void, any Error>
        let server: CloserServer

        init(_ configure: (inout ServerConfiguration) -> Void = { _ in }) async throws {
            var config = ServerConfiguration.testing
            config.app = CloserServer.appName
            config.inviteTTL = CloserServer.defaultInviteTTL
            // Tokens outlive the clock's jumps (an hour's window, a day's TTL): what expires is what is tested.
            config.tokenTTL = 7 * 86_400
            configure(&config)
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let server = try await CloserServer(configuration: config, clock: clock, logger: logger)
            let (stream, continuation) = AsyncStream<ServerKeys>.makeStream()
            task = Task { try await server.run { keys in continuation.yield(keys) } }
            var it = stream.makeAsyncIterator()
            guard let keys = await it.next() else { throw CancellationError() }
            (self.url, self.server) = (keys.url, server)
        }

        func stop() async {
            task.cancel()
            _ = try? await task.value
        }

        func call(_ method: String, _ path: String, _ body: Any? = nil, raw: String? = nil, token: String? = nil) async throws -> (Int, [String: Any], [String: String]) {
            var req = URLRequest(url: URL(string: url + path)!)
            req.httpMethod = method
            if let token { req.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
            if let body { req.httpBody = try JSONSerialization.data(withJSONObject: body) }
            if let raw { req.httpBody = Data(raw.utf8) }
            req.setValue("application/json", forHTTPHeaderField: "Content-Type")
            let (data, response) = try await URLSession.shared.data(for: req)
            let http = response as! HTTPURLResponse
            var headers: [String: String] = [:]
            for (k, v) in http.allHeaderFields { headers[String(describing: k).lowercased()] = String(describing: v) }
            return (http.statusCode, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:], headers)
        }

        func signUp(_ email: String) async throws -> (uid: String, token: String) {
            let (status, o, _) = try await call("POST", "/identitytoolkit.googleapis.com/v1/accounts:signUp?key=k",
                                                ["email": email, "password": "secret12", "returnSecureToken": true])
            #expect(status == 200)
            return (o["localId"] as! String, o["idToken"] as! String)
        }

        func doc(_ path: String) -> String { "/v1/projects/closer-convoy/databases/(default)/documents/\(path)" }
    }

    static func error(_ o: [String: Any]) -> String? { (o["error"] as? [String: Any])?["status"] as? String }

    @Test func pairingMakesOneCoupleAndHandsOverTheWrappedKey() async throws {
        let h = try await Harness()
        defer { Task { await h.stop() } }
        let a = try await h.signUp("a@closer.test"), b = try await h.signUp("b@closer.test"), c = try await h.signUp("c@closer.test")
        let (s1, made, _) = try await h.call("POST", "/createInviteCallable", ["data": ["code": "Ab3dE9", "wrappedKey": "wk", "salt": "s"]], token: a.token)
        #expect(s1 == 200 && (made["result"] as? [String: Any])?["code"] as? String == "Ab3dE9")
        let (taken, t, _) = try await h.call("POST", "/createInviteCallable", ["data": ["code": "Ab3dE9"]], token: c.token)
        #expect(taken == 409 && Self.error(t) == "ALREADY_EXISTS")
        let (s2, accepted, _) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "Ab3dE9"]], token: b.token)
        let result = try #require(accepted["result"] as? [String: Any])
        #expect(s2 == 200 && result["wrappedCoupleKey"] as? String == "wk" && result["partnerId"] as? String == a.uid)
        let couple = try #require(result["coupleId"] as? String)
        // The inviter's document says so (its listener's view); the couple is its members' to read, no one's to write.
        let (_, mine, _) = try await h.call("GET", h.doc("users/\(a.uid)"), token: a.token)
        #expect(((mine["fields"] as? [String: Any])?["coupleId"] as? [String: Any])?["stringValue"] as? String == couple)
        #expect(try await h.call("GET", h.doc("couples/\(couple)"), token: b.token).0 == 200)
        #expect(try await h.call("GET", h.doc("couples/\(couple)"), token: c.token).0 == 403)
        #expect(try await h.call("PATCH", h.doc("couples/\(couple)"), ["fields": ["streakCount": ["integerValue": "9"]]], token: a.token).0 == 403)
        // A used code, an unknown one and the own-invite case.
        let (used, u, _) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "Ab3dE9"]], token: c.token)
        let (unknown, n, _) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "Zz9Zz9"]], token: c.token)
        #expect(used == 404 && unknown == 404 && Self.error(u) == "NOT_FOUND" && (u["error"] as? [String: Any])?["message"] as? String
                    == (n["error"] as? [String: Any])?["message"] as? String)
        // Device keys: the owner's to write; its partner's and its own to read, no one else's.
        #expect(try await h.call("PATCH", h.doc("users/\(a.uid)/devices/primary"), ["fields": ["publicKey": ["stringValue": "pub:v1:x"]]], token: a.token).0 == 200)
        #expect(try await h.call("GET", h.doc("users/\(a.uid)/devices/primary"), token: b.token).0 == 200)
        #expect(try await h.call("GET", h.doc("users/\(a.uid)/devices/primary"), token: c.token).0 == 403)
        #expect(try await h.call("PATCH", h.doc("users/\(a.uid)"), ["fields": ["hasPremium": ["booleanValue": true]]], token: a.token).0 == 403)
    }

    @Test func theEleventhAttemptInAnHourIsRefusedAndTheWindowRolls() async throws {
        let h = try await Harness()
        defer { Task { await h.stop() } }
        let a = try await h.signUp("a@closer.test")
        var statuses: [Int] = []
        for i in 0..<11 { statuses.append(try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "Guess\(i % 10)"]], token: a.token).0) }
        #expect(statuses.prefix(10).allSatisfy { $0 == 404 } && statuses[10] == 429, "\(statuses)")
        let (_, o, headers) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "Guess0"]], token: a.token)
        #expect(Self.error(o) == "RESOURCE_EXHAUSTED" && Int(headers["retry-after"] ?? "") ?? 0 > 3000)
        h.clock.advance(to: h.clock.now() + 3_601)
        #expect(try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "Guess0"]], token: a.token).0 == 404)
    }

    @Test func anInvitePastItsTTLIsGoneAndAnswersAsAnUnknownCode() async throws {
        let h = try await Harness()
        defer { Task { await h.stop() } }
        let a = try await h.signUp("a@closer.test"), b = try await h.signUp("b@closer.test")
        #expect(try await h.call("POST", "/createInviteCallable", ["data": ["code": "Late01"]], token: a.token).0 == 200)
        h.clock.advance(to: h.clock.now() + 24 * 3_600 + 1)
        let (_, invite, _) = try await h.call("GET", h.doc("invites/Late01"), token: a.token)
        #expect(((invite["fields"] as? [String: Any])?["status"] as? [String: Any])?["stringValue"] as? String == "expired")
        let (status, o, _) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "Late01"]], token: b.token)
        #expect(status == 404 && (o["error"] as? [String: Any])?["message"] as? String == CloserError.inviteNotFound.message)
        #expect(try await h.server.purgeOnce() == 1)
    }

    @Test func badInputGetsTheCallableShape() async throws {
        let h = try await Harness()
        defer { Task { await h.stop() } }
        let a = try await h.signUp("a@closer.test")
        for (body, raw) in [(nil, "not json"), (["code": "Ab3dE9"] as Any?, nil), (["data": ["code": "ab"]], nil), (["data": ["code": "Ab3d/9"]], nil),
                            (["data": ["code": 123456]], nil)] as [(Any?, String?)] {
            let (status, o, _) = try await h.call("POST", "/createInviteCallable", body, raw: raw, token: a.token)
            #expect(status == 400 && Self.error(o) == "INVALID_ARGUMENT", "\(String(describing: body ?? raw as Any)): \(status) \(o)")
        }
        let (status, o, _) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "Ab3dE9"]], token: "not.a.token")
        #expect(status == 401 && Self.error(o) == "UNAUTHENTICATED")
        let (weak, w, _) = try await h.call("POST", "/identitytoolkit.googleapis.com/v1/accounts:signUp", ["email": "b@closer.test", "password": "123"])
        #expect(weak == 400 && (w["error"] as? [String: Any])?["message"] as? String == "WEAK_PASSWORD : Password should be at least 6 characters")
        let (wrong, x, _) = try await h.call("POST", "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword", ["email": "a@closer.test", "password": "nope-nope"])
        let (nobody, y, _) = try await h.call("POST", "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword", ["email": "z@closer.test", "password": "nope-nope"])
        #expect(wrong == 400 && nobody == 400 && (x["error"] as? [String: Any])?["message"] as? String == "INVALID_LOGIN_CREDENTIALS"
                    && (y["error"] as? [String: Any])?["message"] as? String == "INVALID_LOGIN_CREDENTIALS")
    }

    /// What a caller learns from accept must not depend on whether a code is live: a caller in a couple is refused
    /// before the code is looked at; one's own invite cannot be accepted; two acceptors racing for one code make one couple.
    @Test func acceptTellsNothingToACoupleAndOneCodeMakesOneCouple() async throws {
        let h = try await Harness()
        defer { Task { await h.stop() } }
        let a = try await h.signUp("a@closer.test"), b = try await h.signUp("b@closer.test")
        #expect(try await h.call("POST", "/createInviteCallable", ["data": ["code": "First1", "wrappedKey": "wk"]], token: a.token).0 == 200)
        let (own, o, _) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "First1"]], token: a.token)
        #expect(own == 400 && Self.error(o) == "INVALID_ARGUMENT")
        var racers: [(uid: String, token: String)] = []
        for i in 0..<6 { racers.append(try await h.signUp("r\(i)@closer.test")) }
        let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for (i, r) in racers.enumerated() {
                group.addTask { (i, try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "First1"]], token: r.token).0) }
            }
            return try await group.reduce(into: [Int: Int]()) { $0[$1.0] = $1.1 }
        }
        #expect(results.values.filter { $0 == 200 }.count == 1 && results.values.filter { $0 == 404 }.count == 5, "\(results)")
        // b makes a live invite; the racer who won, now in a couple, gets one answer for it, the used code and an unknown one.
        #expect(try await h.call("POST", "/createInviteCallable", ["data": ["code": "Live22"]], token: b.token).0 == 200)
        let winner = racers[try #require(results.first { $0.value == 200 }?.key)]
        var answers: Set<String> = []
        for code in ["Live22", "First1", "Nope99"] {
            let (status, body, _) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": code]], token: winner.token)
            answers.insert("\(status) \((body["error"] as? [String: Any])?["message"] as? String ?? "")")
        }
        #expect(answers == ["400 You are already in a couple."], "\(answers)")
    }

    @Test func theCoupleIsStrictOnlyWithTheWholeKeyMaterial() async throws {
        let h = try await Harness()
        defer { Task { await h.stop() } }
        let a = try await h.signUp("a@closer.test"), b = try await h.signUp("b@closer.test")
        let c = try await h.signUp("c@closer.test"), d = try await h.signUp("d@closer.test")
        _ = try await h.call("POST", "/createInviteCallable", ["data": ["code": "Half11", "wrappedKey": "wk"]], token: a.token)
        _ = try await h.call("POST", "/createInviteCallable", ["data": ["code": "Whole1", "wrappedKey": "wk", "salt": "s", "params": "p", "encryptedPhrase": "e"]],
                             token: c.token)
        func version(_ code: String, _ acceptor: (uid: String, token: String)) async throws -> Int? {
            let (_, r, _) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": code]], token: acceptor.token)
            let couple = try #require((r["result"] as? [String: Any])?["coupleId"] as? String)
            let (_, doc, _) = try await h.call("GET", h.doc("couples/\(couple)"), token: acceptor.token)
            return ((doc["fields"] as? [String: Any])?["encryptionVersion"] as? [String: Any]).flatMap { Int("\($0["integerValue"] ?? "")") }
        }
        #expect(try await version("Half11", b) == 0)
        #expect(try await version("Whole1", d) == 2)
        // The recovery phrase goes to the acceptor once; the invite keeps no copy.
        let (_, invite, _) = try await h.call("GET", h.doc("invites/Whole1"), token: c.token)
        #expect(((invite["fields"] as? [String: Any])?["recoveryPhrase"] as? [String: Any])?["nullValue"] != nil)
    }

    @Test func creatingIsLimitedAndHostedDefaultsLimitSignUps() async throws {
        let h = try await Harness { $0.rateLimits = .supabase }
        defer { Task { await h.stop() } }
        let a = try await h.signUp("a@closer.test")
        var statuses: [Int] = []
        for i in 0..<11 { statuses.append(try await h.call("POST", "/createInviteCallable", ["data": ["code": "Code\(i < 10 ? "0\(i)" : "\(i)")"]], token: a.token).0) }
        #expect(statuses.prefix(10).allSatisfy { $0 == 200 } && statuses[10] == 429, "\(statuses)")
        for i in 1..<100 { _ = try await h.call("POST", "/identitytoolkit.googleapis.com/v1/accounts:signUp", ["email": "s\(i)@closer.test", "password": "secret12"]) }
        let (quota, q, _) = try await h.call("POST", "/identitytoolkit.googleapis.com/v1/accounts:signUp", ["email": "late@closer.test", "password": "secret12"])
        #expect(quota == 429 && (q["error"] as? [String: Any])?["message"] as? String == "TOO_MANY_ATTEMPTS_TRY_LATER")
    }
}
