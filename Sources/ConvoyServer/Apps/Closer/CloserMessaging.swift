import ConvoyJSON
import ConvoyTime
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Synchronization

/// FCM as Closer's phones receive it (closer-engineering-manual.md, "Notifications"): each phone registers a token
/// in `users/{uid}/fcmTokens/{id}` (`{"token": …}`), and a Cloud Function that notifies a user looks up its tokens
/// there and sends to each. Convoy's stand-in for FCM's own connection (a device's persistent socket to Google,
/// ports 5228–5230) is a websocket at `GET /fcm/connect?token=<registration token>`: each message sent to the token
/// is one text frame, `{"message": {"data": {…}, "notification": {"title", "body"}}}`. A message for a token with no
/// connection waits for it (FCM keeps them for an offline device), at most `pendingKept` a token.
final class CloserMessaging: Sendable {
    private struct State {
        var connections: [String: RealtimeOutlet] = [:]
        var pending: [String: [String]] = [:]
        var sent = 0
        var delivered = 0
    }

    private let state = Mutex(State())
    static let pendingKept = 100

    /// Messages sent, and of them delivered down a connection so far.
    var counts: (sent: Int, delivered: Int) { state.withLock { ($0.sent, $0.delivered) } }

    func connect(_ token: String, _ outlet: RealtimeOutlet) {
        let waiting: [String] = state.withLock { s in
            s.connections[token]?.closeIdle()
            s.connections[token] = outlet
            s.delivered += s.pending[token]?.count ?? 0
            return s.pending.removeValue(forKey: token) ?? []
        }
        for text in waiting { outlet.send(text) }
    }

    func disconnect(_ token: String, _ outlet: RealtimeOutlet) {
        state.withLock { s in
            if s.connections[token] === outlet { s.connections[token] = nil }
        }
        outlet.finish()
    }

    /// Sends `data` (and a tray notification) to each of `tokens`.
    func send(to tokens: [String], data: [String: String], title: String, body: String) {
        let message: JSONValue = ["message": ["data": JSONValue(data.mapValues { JSONValue.string($0) }),
                                              "notification": ["title": .string(title), "body": .string(body)]]]
        let text = message.text
        for token in tokens {
            let outlet: RealtimeOutlet? = state.withLock { s in
                s.sent += 1
                if let o = s.connections[token], !o.isClosed {
                    s.delivered += 1
                    return o
                }
                var queue = s.pending[token] ?? []
                queue.append(text)
                if queue.count > Self.pendingKept { queue.removeFirst() }
                s.pending[token] = queue
                return nil
            }
            outlet?.send(text)
        }
    }
}

extension CloserRoutes {
    /// `GET /fcm/connect?token=…`, upgraded to a websocket: a device's FCM connection (its registration token is its
    /// address; FCM's own connection is authenticated by the device, not by Firebase Auth).
    func addMessaging(to router: Router<RealtimeRequestContext>) {
        router.ws("fcm/connect") { request, _ in
            guard let token = request.uri.queryParameters["token"].map(String.init), Self.isRegistrationToken(token) else { return .dontUpgrade }
            return .upgrade([:])
        } onUpgrade: { inbound, _, context in
            guard let token = context.request.uri.queryParameters["token"].map(String.init) else { return }
            let outlet = RealtimeOutlet(channel: context.requestContext.channel, heardAt: clock.now())
            messaging.connect(token, outlet)
            defer { messaging.disconnect(token, outlet) }
            for try await _ in inbound.messages(maxSize: 1 << 12) {}  // a device sends nothing down it but pings
        }
    }

    static func isRegistrationToken(_ s: String) -> Bool {
        (20...4096).contains(s.utf8.count) && s.utf8.allSatisfy { isAlnum($0) || $0 == 0x2D || $0 == 0x5F || $0 == 0x3A }
    }

    /// The registration tokens in `users/{uid}/fcmTokens` (what `onAnswerWritten` and the reminders look up).
    func tokens(of uid: String) -> [String] {
        store.with { s in (s.users[uid]?.fcmTokens.values.compactMap { $0["token"]?.value["stringValue"]?.string } ?? []).sorted() }
    }

    /// `onAnswerWritten`: the partner's tokens get "your partner answered" (data routing to the reveal screen).
    func notifyPartnerAnswered(couple: String, date: String, author: String) {
        let partners = store.with { s in s.couples[couple]?.userIds.filter { $0 != author } ?? [] }
        for p in partners {
            messaging.send(to: tokens(of: p), data: ["type": "partner_answered", "coupleId": couple, "date": date],
                           title: "Your partner answered", body: "Answer today's question to see theirs.")
        }
    }
}
