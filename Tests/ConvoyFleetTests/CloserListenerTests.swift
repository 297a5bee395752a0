import ConvoyJSON
import ConvoyMetrics
import ConvoyServer
import ConvoySodium
import ConvoyTime
import ConvoyWire
import Foundation
import Logging
import Testing
@testable import ConvoyFleet

/// A Closer phone's looks with its Firestore listeners held (`CloserApp.openListener`): once what it listens to is
/// current, a look reads it from what was pushed and sends nothing, where a phone without a listener reads every
/// document over HTTP at every look; a write by its partner reaches it down the connection.
@Suite struct CloserListenerTests {
    @Test func aListeningPhonesLookReadsWhatWasPushedAndAPollersGoesOverHTTP() async throws {
        var config = ServerConfiguration.testing
        config.app = CloserServer.appName
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = try await EmbeddedServer.start(config, logger: logger)
        let closer = try #require(server.backend as? CloserServer)
        let engine = try HTTPEngine()
        defer {
            engine.shutdown()
            Task { await server.stop() }
        }
        let http = SupabaseHTTP(engine: engine, target: SupabaseTarget(url: server.keys.url, anonKey: "", serviceKey: nil))
        let app = CloserApp()
        let keys = try BoxKeyPair()
        let a = try await app.signUp(email: "listen-a@closer.test", password: "secret-password-1", keys: keys, adminKey: nil, via: http)
        let b = try await app.signUp(email: "listen-b@closer.test", password: "secret-password-1", keys: keys, adminKey: nil, via: http)
        let code = try await app.createInvite(token: a.accessToken, via: http)
        try await app.acceptInvite(code, token: b.accessToken, via: http)

        // Phone A listens; B polls.
        let (pushes, continuation) = AsyncStream<Bool>.makeStream()
        let listener = try #require(try await app.openListener(session: a, via: http, proxy: nil) { continuation.yield($0.changed) })
        defer { listener.close() }
        var heard = pushes.makeAsyncIterator()
        _ = try await app.fetchMailbox(limit: 50, session: a, via: http)
        _ = try await app.fetchMailbox(limit: 50, session: b, via: http)
        // Until everything A listens to is current (each push is read in before it is handed on); 10 s at most.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(10))
            continuation.finish()
        }
        defer { watchdog.cancel() }
        let reader = try #require(app.phones.listener(of: a.userID))
        while app.listenedPaths(of: a.userID).contains(where: { reader.snapshot($0) == .unknown }) {
            guard await heard.next() != nil else { break }
        }
        let unknown = app.listenedPaths(of: a.userID).filter { reader.snapshot($0) == .unknown }
        #expect(unknown.isEmpty, "never current: \(unknown)")
        #expect(app.listenedPaths(of: a.userID).count == 5)  // its user, its couple, today's question, B's answer and key

        // A look now: nothing on the wire, no GET at the backend.
        let gets = closer.documentGets
        let look = try await app.fetchMailbox(limit: 50, session: a, via: http)
        #expect(closer.documentGets == gets && look.bytesUp == 0 && look.bytesDown == 0, "\(closer.documentGets - gets) GETs, \(look)")
        // The control: B's look reads its documents over HTTP.
        let polled = try await app.fetchMailbox(limit: 50, session: b, via: http)
        #expect(closer.documentGets >= gets + 1 && polled.bytesDown > 0, "\(closer.documentGets - gets) GETs")

        // B answers: A is told down its connection, and its next look reads the answer from what was pushed.
        let partner = Friend(index: 0, userID: a.userID, publicKey: nil, iShare: "precise", active: true)
        let sealed = try #require(try app.composeDirect(DirectMessage(kind: .text, seq: 1, sentNanos: 0, size: 40), to: partner, from: b, keys: keys))
        _ = try await app.postDirect(sealed, from: b, via: http)
        let answer = CloserApp.answerPath(try #require(app.phones.today(of: b.userID)), of: b.userID)
        while reader.snapshot(answer) == .missing {
            guard await heard.next() != nil else { break }
        }
        if case .present = reader.snapshot(answer) {} else { Issue.record("B's answer never reached A: \(reader.snapshot(answer))") }
        let after = closer.documentGets
        _ = try await app.fetchMailbox(limit: 50, session: a, via: http)
        #expect(closer.documentGets == after)
    }

    /// The reminders owed at the end: a partner of a couple whose mark came early enough for the scan and the delivery
    /// before the end, while its FCM connection was up; received or missed; nothing owed says why, and is not a pass.
    @Test func remindersOwedAreThoseThatHadTheirChanceAndAMissingOneIsMissed() {
        let r = CloserReminders(outcomeDay: 2, reminderEvery: 60)
        let t0 = Date().timeIntervalSince1970
        #expect(r.report(until: t0)?.notTested == "no couple was made in the run")
        r.connected("a")
        r.connected("b")
        let created = Date(timeIntervalSince1970: t0).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        r.couple("c1", of: ["createdAt": ["timestampValue": .string(created)], "userIds": ["arrayValue": ["values": [["stringValue": "a"], ["stringValue": "b"]]]]])
        // Day 30 is 60 s in; the scan may take its minute, and delivery its grace: owed from 125 s on.
        let early = r.report(until: t0 + 124)
        #expect(early?.due == 0 && early?.notTested?.contains("30 × outcome_day = 1 min") == true, "\(String(describing: early))")
        let reminder = JSONValue(["message": ["data": ["type": "outcome_day_30", "coupleId": "c1", "outcomeDate": .string(
            Date(timeIntervalSince1970: t0 + 60).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))]]]).text
        let push = r.received(reminder, by: "a")
        #expect(push.notification == "outcome_day_30" && push.dueAt.map { abs($0 - (t0 + 60)) < 0.01 } == true && !push.changed)
        // A received its reminder, B did not: one missed, which fails `outcome_reminders_missed == 0`.
        let later = r.report(until: t0 + 126)
        #expect(later?.due == 2 && later?.received == 1 && later?.missed == ["not_received": 1] && later?.notTested == nil,
                "\(String(describing: later))")
        #expect(later?.receivedByKind == ["outcome_day_30": 1])
    }
}
