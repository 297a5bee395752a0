import ConvoyJSON
import ConvoyTime
import ConvoyWire
import Foundation
import Testing
@testable import ConvoyServer

/// Closer's daily question on `convoy serve --app closer` (closer-engineering-manual.md, "Daily question lifecycle",
/// "Firestore security rules"): the callable assigns today's question once; answers take the sealed shape and only
/// their reveal metadata changes afterwards; release keys are create-only by the answer's owner and readable by the
/// named recipient alone; the per-minute reminder reads every couple and queues each outcome reminder once.
@Suite struct CloserQuestionServerTests {
    typealias H = CloserServerTests.Harness

    static func couple(_ h: H) async throws -> (a: (uid: String, token: String), b: (uid: String, token: String), c: (uid: String, token: String), id: String) {
        let a = try await h.signUp("qa@closer.test"), b = try await h.signUp("qb@closer.test"), c = try await h.signUp("qc@closer.test")
        _ = try await h.call("POST", "/createInviteCallable", ["data": ["code": "Qu3st1", "wrappedKey": "wk", "salt": "s", "params": "p"]], token: a.token)
        let (_, accepted, _) = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "Qu3st1"]], token: b.token)
        return (a, b, c, try #require((accepted["result"] as? [String: Any])?["coupleId"] as? String))
    }

    static let payload = "sealed:v1:" + String(repeating: "A_-9", count: 25)
    static let commitment = "sha256:" + String(repeating: "x", count: 43)
    static let keybox = "keybox:v1:" + String(repeating: "k-_Z", count: 40)

    static func answer(_ uid: String, question: String, payload: String = payload) -> [String: Any] {
        ["fields": ["userId": ["stringValue": uid], "questionId": ["stringValue": question], "schemaVersion": ["integerValue": "3"],
                    "encryptedPayload": ["stringValue": payload], "commitmentHash": ["stringValue": commitment],
                    "answerKeyReleased": ["booleanValue": false]]]
    }

    @Test func answersAndReleaseKeysFollowTheRules() async throws {
        let h = try await H()
        defer { Task { await h.stop() } }
        let (a, b, c, id) = try await Self.couple(h)
        // Today's question, assigned once: the second call returns the same.
        let (s1, first, _) = try await h.call("POST", "/assignDailyQuestionCallable", ["data": [:]], token: a.token)
        let (_, again, _) = try await h.call("POST", "/assignDailyQuestionCallable", ["data": [:]], token: b.token)
        let q = try #require(first["result"] as? [String: Any]), date = try #require(q["date"] as? String), question = try #require(q["questionId"] as? String)
        #expect(s1 == 200 && (again["result"] as? [String: Any])?["questionId"] as? String == question)
        #expect(try await h.call("POST", "/assignDailyQuestionCallable", ["data": [:]], token: c.token).0 == 400)  // in no couple
        let day = "couples/\(id)/daily_question/\(date)"
        #expect(try await h.call("GET", h.doc(day), token: b.token).0 == 200)
        #expect(try await h.call("GET", h.doc(day), token: c.token).0 == 403)
        #expect(try await h.call("PATCH", h.doc(day), ["fields": ["questionId": ["stringValue": "mine"]]], token: a.token).0 == 403)

        // Answers: the sealed shape or nothing; the author's own; once.
        let mine = h.doc("\(day)/answers/\(a.uid)")
        #expect(try await h.call("PATCH", mine, Self.answer(a.uid, question: question, payload: "sealed:v1:short"), token: a.token).0 == 403)
        #expect(try await h.call("PATCH", mine, Self.answer(a.uid, question: "another"), token: a.token).0 == 403)
        #expect(try await h.call("PATCH", h.doc("\(day)/answers/\(b.uid)"), Self.answer(b.uid, question: question), token: a.token).0 == 403)
        #expect(try await h.call("PATCH", mine + "?currentDocument.exists=false", Self.answer(a.uid, question: question), token: a.token).0 == 200)
        #expect(try await h.call("PATCH", mine + "?currentDocument.exists=false", Self.answer(a.uid, question: question), token: a.token).0 == 409)
        #expect(try await h.call("GET", mine, token: b.token).0 == 200)
        #expect(try await h.call("GET", mine, token: c.token).0 == 403)
        #expect(try await h.call("GET", h.doc("\(day)/answers/\(b.uid)"), token: a.token).0 == 404)
        // After creation, only the reveal metadata changes.
        let other = "sealed:v1:" + String(repeating: "B", count: 100)
        #expect(try await h.call("PATCH", mine + "?updateMask.fieldPaths=encryptedPayload", ["fields": ["encryptedPayload": ["stringValue": other]]], token: a.token).0 == 403)
        #expect(try await h.call("PATCH", mine + "?updateMask.fieldPaths=isRevealed", ["fields": ["isRevealed": ["booleanValue": true]]], token: a.token).0 == 200)

        // Release keys: by the answer's owner, for its partner, a keybox, once; read by the recipient alone.
        let box = h.doc("\(day)/answers/\(a.uid)/releaseKeys/\(b.uid)")
        #expect(try await h.call("PATCH", box, ["fields": ["encryptedAnswerKey": ["stringValue": "keybox:v1:short"]]], token: a.token).0 == 403)
        #expect(try await h.call("PATCH", box, ["fields": ["encryptedAnswerKey": ["stringValue": Self.keybox]]], token: b.token).0 == 403)
        #expect(try await h.call("PATCH", box, ["fields": ["encryptedAnswerKey": ["stringValue": Self.keybox]]], token: a.token).0 == 200)
        #expect(try await h.call("PATCH", box, ["fields": ["encryptedAnswerKey": ["stringValue": Self.keybox]]], token: a.token).0 == 403)
        #expect(try await h.call("GET", box, token: b.token).0 == 200)
        #expect(try await h.call("GET", box, token: a.token).0 == 403)
        #expect(try await h.call("GET", box, token: c.token).0 == 403)
        // No key for an answer not written.
        #expect(try await h.call("PATCH", h.doc("\(day)/answers/\(b.uid)/releaseKeys/\(a.uid)"),
                                 ["fields": ["encryptedAnswerKey": ["stringValue": Self.keybox]]], token: b.token).0 == 403)
    }

    @Test func theReminderReadsEveryCoupleAndQueuesEachOutcomeOnce() async throws {
        let h = try await H { $0.reminderEvery = 0 }
        defer { Task { await h.stop() } }
        _ = try await Self.couple(h)
        #expect(h.server.remindOutcomesOnce() == (1, 0))
        h.clock.advance(by: 30 * 86_400 + 1)
        #expect(h.server.remindOutcomesOnce() == (1, 2))  // day 30, both partners
        #expect(h.server.remindOutcomesOnce() == (1, 0))  // once
        h.clock.advance(by: 60 * 86_400)
        #expect(h.server.remindOutcomesOnce() == (1, 4))  // days 60 and 90
        #expect(h.server.store.with { s in s.users.values.map(\.notifications.count).sorted() } == [0, 3, 3])
    }

    @Test func remindersAndPartnerAnsweredGoToEachDevicesFCMTokenAndWaitForAnOfflineOne() async throws {
        let h = try await H {
            $0.reminderEvery = 0
            $0.outcomeDay = 10
        }
        defer { Task { await h.stop() } }
        let (a, b, _, id) = try await Self.couple(h)
        let created = try #require(h.server.store.with { $0.couples[id]?.createdAt })
        // A's device registers its token and connects; B's registers and stays offline.
        let (tokenA, tokenB) = (FCMConnection.newToken(), FCMConnection.newToken())
        for (user, token) in [(a, tokenA), (b, tokenB)] {
            #expect(try await h.call("PATCH", h.doc("users/\(user.uid)/fcmTokens/primary"), ["fields": ["token": ["stringValue": token]]], token: user.token).0 == 200)
        }
        #expect(try await h.call("PATCH", h.doc("users/\(b.uid)/fcmTokens/primary"), ["fields": ["token": ["stringValue": "short"]]], token: b.token).0 == 403)
        #expect(try await h.call("GET", h.doc("users/\(b.uid)/fcmTokens/primary"), token: a.token).0 == 403)
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let fcmA = try await FCMConnection.open(url: h.url, token: tokenA) { continuation.yield($0) }
        defer { fcmA.close() }
        var messages = stream.makeAsyncIterator()
        func next() async -> JSONValue? {
            let deadline = Task {
                try await Task.sleep(for: .seconds(10))
                continuation.finish()
            }
            defer { deadline.cancel() }
            return await messages.next().flatMap { JSONScanner.parse(Array($0.utf8))?["message"]?["data"] }
        }

        // Day 30 of 10-second days: the scan reminds both, with the date the couple reached the mark.
        h.clock.advance(by: 300 + 1)
        #expect(h.server.remindOutcomesOnce() == (1, 2))
        let reminder = try #require(await next())
        #expect(reminder["type"]?.string == "outcome_day_30" && reminder["coupleId"]?.string == id)
        let date = try #require(reminder["outcomeDate"]?.string)
        let at = try Date(date, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        #expect(abs(at.timeIntervalSince(created) - 300) < 0.01)
        #expect(h.server.messagesSent == (2, 1))  // B's device is offline: its message waits

        // B answers today's question: A is told its partner answered.
        let (_, q, _) = try await h.call("POST", "/assignDailyQuestionCallable", ["data": [:]], token: b.token)
        let question = try #require(q["result"] as? [String: Any])
        let day = "couples/\(id)/daily_question/\(try #require(question["date"] as? String))"
        #expect(try await h.call("PATCH", h.doc("\(day)/answers/\(b.uid)") + "?currentDocument.exists=false",
                                 Self.answer(b.uid, question: try #require(question["questionId"] as? String)), token: b.token).0 == 200)
        let answered = try #require(await next())
        #expect(answered["type"]?.string == "partner_answered" && answered["coupleId"]?.string == id)

        // B's device connects: the reminder that waited for it comes first.
        let (streamB, continuationB) = AsyncStream<String>.makeStream()
        let fcmB = try await FCMConnection.open(url: h.url, token: tokenB) { continuationB.yield($0) }
        defer { fcmB.close() }
        var messagesB = streamB.makeAsyncIterator()
        let deadline = Task {
            try await Task.sleep(for: .seconds(10))
            continuationB.finish()
        }
        defer { deadline.cancel() }
        let waited = await messagesB.next().flatMap { JSONScanner.parse(Array($0.utf8))?["message"]?["data"] }
        #expect(waited?["type"]?.string == "outcome_day_30")
    }
}
