import ConvoyJSON
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation
import Synchronization

/// A Closer phone's held connections (closer-engineering-manual.md, "Notifications"; docs/battery.md, "Listeners and
/// polls"): its Firestore listeners, whose pushes its looks read instead of the wire (`ListenedReads`), and FCM's
/// connection for its notifications, the outcome reminders among them (`CloserReminders`: owed, received, missed).
extension CloserApp {
    /// The phone's Firestore listeners, on one held connection (`FirestoreListener`): what `fetchMailbox` reads of its
    /// own user document, today's question, the partner's answer and the key released to it comes from what the
    /// backend pushed.
    ///
    /// And FCM's: the phone registers a token in `users/{uid}/fcmTokens/{id}` and connects with it; each notification
    /// is handed on (an outcome reminder with the date its couple reached the mark, and recorded as received).
    public func openListener(session: Session, via http: SupabaseHTTP, proxy: TunnelProxy?,
                             pushed: @escaping @Sendable (MailboxPush) -> Void) async throws(SupabaseError) -> (any MailboxListener)? {
        let me = session.userID
        let listener = try await FirestoreListener.open(url: http.target.url, project: Self.project, token: session.accessToken, proxy: proxy) { bytes, changed in
            pushed(MailboxPush(bytes: bytes, changed: changed))
        }
        let fcmToken = FCMConnection.newToken()
        let fcm: FCMConnection
        do {
            try await client(http).write("users/\(me)/fcmTokens/primary", fields: ["token": ["stringValue": .string(fcmToken)], "platform": ["stringValue": "android"],
                                                                                   "updatedAt": ["timestampValue": .string(Date().formatted(.iso8601))]],
                                         token: session.accessToken)
            fcm = try await FCMConnection.open(url: http.target.url, token: fcmToken, proxy: proxy) { [reminders] text in
                pushed(reminders.received(text, by: me))
            }
        } catch {
            listener.close()
            throw error
        }
        listener.listen(to: ["users/\(me)"])
        phones.listening(me, listener)
        reminders.connected(me)
        return CloserConnections(listener: listener, fcm: fcm, user: me, reminders: reminders)
    }

    public func notifications(until end: Double) -> NotificationReport? { reminders.report(until: end) }
}

/// One look's reads: a document the phone listens to is read from what the listener was pushed (nothing on the
/// wire), any other over HTTP; the bytes each way of what did go over HTTP (headers estimated: the ID token and
/// about 300 bytes).
final class ListenedReads {
    let client: FirebaseClient
    let listener: FirestoreListener?
    private(set) var bytes = 0
    private(set) var bytesUp = 0

    init(client: FirebaseClient, listener: FirestoreListener?) { (self.client, self.listener) = (client, listener) }

    func spent(up: Int, down: Int) { (bytesUp, bytes) = (bytesUp + up, bytes + down) }

    /// Listens to exactly `paths` from now on; the bytes the change sent (0 without a listener).
    func listen(to paths: Set<String>) -> Int { listener?.listen(to: paths) ?? 0 }

    func document(_ path: String, token: String) async throws(SupabaseError) -> JSONValue {
        switch listener?.snapshot(path) ?? .unknown {
        case .present(let fields): return fields
        case .missing: throw SupabaseError(kind: .http(status: 404, code: "NOT_FOUND"), message: "Document not found: \(path)")
        case .unknown:
            let fields = try await client.document(path, token: token)
            spent(up: path.utf8.count + token.utf8.count + 300, down: fields.text.utf8.count + 300)
            return fields
        }
    }

    func documentIfAny(_ path: String, token: String) async throws(SupabaseError) -> (fields: JSONValue, created: Double)? {
        switch listener?.snapshot(path) ?? .unknown {
        case .present(let fields): return (fields, Date().timeIntervalSince1970)
        case .missing: return nil
        case .unknown:
            let found = try await client.documentIfAny(path, token: token)
            spent(up: path.utf8.count + token.utf8.count + 300, down: (found?.fields.text.utf8.count ?? 100) + 300)
            return found
        }
    }

    func call(_ function: String, _ data: JSONValue, token: String) async throws(SupabaseError) -> JSONValue {
        let result = try await client.call(function, data, token: token)
        spent(up: function.utf8.count + data.text.utf8.count + token.utf8.count + 300, down: result.text.utf8.count + 300)
        return result
    }
}

/// A Closer phone's two held connections: its Firestore listeners and FCM.
final class CloserConnections: MailboxListener {
    let listener: FirestoreListener
    let fcm: FCMConnection
    let user: String
    let reminders: CloserReminders

    init(listener: FirestoreListener, fcm: FCMConnection, user: String, reminders: CloserReminders) {
        (self.listener, self.fcm, self.user, self.reminders) = (listener, fcm, user, reminders)
    }

    /// Open while both are (one closing has the phone open both again).
    var isOpen: Bool { listener.isOpen && fcm.isOpen }
    var bytes: (up: Int, down: Int) { listener.bytes }
    func ping() { listener.ping() }

    func close() {
        listener.close()
        fcm.close()
        reminders.disconnected(user)
    }
}

/// Closer's outcome reminders in a run: the couples the phones learnt of (made when, by whom), when each phone's FCM
/// connection was up, and the reminders received; at the end, those owed and those missed.
final class CloserReminders: Sendable {
    let outcomeDay: Double
    let reminderEvery: Double
    /// How long after the scan a reminder may take to arrive and still count (FCM's delivery on a busy machine).
    static let grace = 5.0
    static let marks = [30, 60, 90]

    private struct State {
        var couples: [String: (created: Double, members: [String])] = [:]
        /// Each user's FCM connection: since when, and until when (nil: still up).
        var connected: [String: (from: Double, to: Double?)] = [:]
        var received: Set<String> = []
        var byKind: [String: Int] = [:]
    }

    private let state = Mutex(State())

    init(outcomeDay: Double, reminderEvery: Double) { (self.outcomeDay, self.reminderEvery) = (outcomeDay, reminderEvery) }

    func connected(_ user: String) { state.withLock { $0.connected[user] = (Date().timeIntervalSince1970, nil) } }
    func disconnected(_ user: String) { state.withLock { $0.connected[user]?.to = Date().timeIntervalSince1970 } }

    /// A couple's document as read: when it was made and by whom.
    func couple(_ id: String, of fields: JSONValue) {
        guard let text = fields["createdAt"]?["timestampValue"]?.string,
              let created = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) else { return }
        let members = FirebaseClient.strings(fields, "userIds")
        state.withLock { s in if s.couples[id] == nil { s.couples[id] = (created.timeIntervalSince1970, members) } }
    }

    /// An FCM message to `user`: what it is to the phone (an outcome reminder: the mark's date is when it came due).
    func received(_ text: String, by user: String) -> MailboxPush {
        let data = JSONScanner.parse(Array(text.utf8))?["message"]?["data"]
        let kind = data?["type"]?.string ?? "unknown"
        var push = MailboxPush(bytes: text.utf8.count + 4, changed: false, notification: kind)
        if kind.hasPrefix("outcome_day_"), let couple = data?["coupleId"]?.string, let date = data?["outcomeDate"]?.string,
           let at = try? Date(date, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
            push.dueAt = at.timeIntervalSince1970
            _ = state.withLock { $0.received.insert("\(user)|\(couple)|\(kind)") }
        }
        state.withLock { $0.byKind[kind, default: 0] += 1 }
        return push
    }

    /// What was owed by `end` (Unix seconds) and what came: a partner is owed a couple's mark when the couple reached it
    /// early enough for the next scan and the delivery's grace to come before `end`, and its FCM connection was up
    /// from then until `end`.
    func report(until end: Double) -> NotificationReport? {
        state.withLock { s in
            var r = NotificationReport()
            (r.outcomeDay, r.reminderEvery, r.receivedByKind) = (outcomeDay, reminderEvery, s.byKind)
            for (id, c) in s.couples {
                for mark in Self.marks {
                    let latest = c.created + Double(mark) * outcomeDay + reminderEvery + Self.grace
                    guard latest <= end else { continue }
                    for user in c.members {
                        guard let up = s.connected[user], up.from <= latest, (up.to ?? .infinity) >= latest else { continue }
                        r.due += 1
                        if s.received.contains("\(user)|\(id)|outcome_day_\(mark)") { r.received += 1 } else { r.missed["not_received", default: 0] += 1 }
                    }
                }
            }
            if r.due == 0 {
                r.notTested = s.couples.isEmpty ? "no couple was made in the run"
                    : String(format: "no couple reached its 30-day mark (30 × outcome_day = %@) early enough for the scan (every %@) to remind it before the run ended",
                             RetentionReport.duration(30 * outcomeDay), RetentionReport.duration(reminderEvery))
            }
            return r
        }
    }
}
