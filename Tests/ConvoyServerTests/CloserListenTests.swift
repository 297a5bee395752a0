import ConvoyJSON
import ConvoyTime
import ConvoyWire
import Foundation
import Testing
@testable import ConvoyServer

/// Firestore's Listen on `convoy serve --app closer` (`CloserListeners`), through the phones' client
/// (`FirestoreListener`): a listened document comes when its target is added and again when a write changes it; a
/// write that changes nothing a listener sees, or changes what it does not listen to, sends it nothing; a document the
/// rules refuse the caller is removed from its targets, as a denied listener is.
@Suite struct CloserListenTests {
    typealias H = CloserServerTests.Harness

    /// A listener and the messages pushed to it, in order (each: whether it changed what `snapshot` answers).
    struct Listening {
        let listener: FirestoreListener
        var messages: AsyncStream<Bool>.Iterator
        let continuation: AsyncStream<Bool>.Continuation

        init(_ h: H, token: String) async throws {
            let (stream, continuation) = AsyncStream<Bool>.makeStream()
            listener = try await FirestoreListener.open(url: h.url, project: "closer-convoy", token: token) { _, changed in
                continuation.yield(changed)
            }
            messages = stream.makeAsyncIterator()
            self.continuation = continuation
        }

        /// The next message pushed; nil if none comes within 10 s (the stream ends: the test fails rather than hangs).
        mutating func next() async -> Bool? {
            let c = continuation
            let deadline = Task {
                try await Task.sleep(for: .seconds(10))
                c.finish()
            }
            defer { deadline.cancel() }
            return await messages.next()
        }

        /// The next `n` messages' flags (fewer if the stream ends). What `snapshot` answers after them is at least as new
        /// as the last of them: each is read into the listener before it is handed on.
        mutating func take(_ n: Int) async -> [Bool] {
            var out: [Bool] = []
            while out.count < n, let m = await next() { out.append(m) }
            return out
        }
    }

    static func field(_ snapshot: FirestoreListener.Snapshot, _ key: String) -> String? {
        guard case .present(let fields) = snapshot else { return nil }
        return fields[key]?["stringValue"]?.string
    }

    @Test func aListenerIsPushedWhatChangesUnderTheRulesAndNothingElse() async throws {
        let h = try await H()
        defer { Task { await h.stop() } }
        let a = try await h.signUp("la@closer.test"), b = try await h.signUp("lb@closer.test"), c = try await h.signUp("lc@closer.test")
        var l = try await Listening(h, token: a.token)
        defer { l.listener.close() }

        // Its own document: pushed when the target is added (ADD, the document, CURRENT), with no coupleId yet.
        let me = "users/\(a.uid)"
        #expect(l.listener.snapshot(me) == .unknown)
        l.listener.listen(to: [me])
        #expect(await l.take(3) == [false, false, true])  // ADD, the document (not current yet), CURRENT
        #expect(Self.field(l.listener.snapshot(me), "coupleId") == nil)
        if case .present = l.listener.snapshot(me) {} else { Issue.record("its own document should be there") }

        // Paired by another's call: the callable's write reaches it.
        _ = try await h.call("POST", "/createInviteCallable", ["data": ["code": "L1sten", "wrappedKey": "wk", "salt": "s", "params": "p"]], token: a.token)
        _ = try await h.call("POST", "/acceptInviteCallable", ["data": ["code": "L1sten"]], token: b.token)
        #expect(await l.take(1) == [true])
        #expect(Self.field(l.listener.snapshot(me), "coupleId") != nil)

        // Its partner's device key (its partner may read it), and a stranger's (the rules refuse it: removed).
        let partnerKey = "users/\(b.uid)/devices/primary", strangerKey = "users/\(c.uid)/devices/primary"
        _ = try await h.call("PATCH", h.doc(partnerKey), ["fields": ["publicKey": ["stringValue": "pub:v1:one"]]], token: b.token)
        _ = try await h.call("PATCH", h.doc(strangerKey), ["fields": ["publicKey": ["stringValue": "pub:v1:c"]]], token: c.token)
        l.listener.listen(to: [me, partnerKey, strangerKey])
        // The partner's: ADD, the document, CURRENT; the stranger's: ADD, REMOVE (which changes what it knows).
        #expect(await l.take(5).filter { $0 }.count == 2)
        #expect(Self.field(l.listener.snapshot(partnerKey), "publicKey") == "pub:v1:one")
        // The stranger's key: removed (PERMISSION_DENIED), as a GET of it is refused.
        #expect(l.listener.snapshot(strangerKey) == .unknown && !l.listener.isListening(strangerKey))
        #expect(try await h.call("GET", h.doc(strangerKey), token: a.token).0 == 403)

        // A write it does not listen to, and a write that changes nothing it sees, send it nothing: the next message
        // is the change that follows them (one connection's messages keep the writes' order).
        _ = try await h.call("PATCH", h.doc(strangerKey), ["fields": ["publicKey": ["stringValue": "pub:v1:c2"]]], token: c.token)
        _ = try await h.call("PATCH", h.doc(partnerKey), ["fields": ["publicKey": ["stringValue": "pub:v1:one"]]], token: b.token)
        _ = try await h.call("PATCH", h.doc(partnerKey), ["fields": ["publicKey": ["stringValue": "pub:v1:two"]]], token: b.token)
        #expect(await l.next() == true)
        #expect(Self.field(l.listener.snapshot(partnerKey), "publicKey") == "pub:v1:two")

        // Removed: a document it stopped listening to is read over HTTP again.
        l.listener.listen(to: [me])
        #expect(l.listener.snapshot(partnerKey) == .unknown)
    }

    @Test func aListenWithoutAValidTokenIsRefusedAndABadRequestClosesIt() async throws {
        let h = try await H()
        defer { Task { await h.stop() } }
        await #expect(throws: SupabaseError.self) { _ = try await FirestoreListener.open(url: h.url, project: "closer-convoy", token: "not-a-token") { _, _ in } }
        let a = try await h.signUp("lbad@closer.test")
        var l = try await Listening(h, token: a.token)
        // A target outside the project's documents is removed with its cause, and the connection stays open.
        l.listener.listen(to: ["users"])
        #expect(await l.next() == true)
        #expect(l.listener.isOpen)
        #expect(h.server.routes.listeners.count == 1)
        l.listener.close()
    }
}
