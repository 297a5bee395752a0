import ConvoyJSON
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation
import Synchronization

/// The daily question on a Closer phone (closer-engineering-manual.md, "Daily question lifecycle", "Sealed-answer
/// partner-proof mode"), through the mailbox room: an answer is a message to the partner that is held until the
/// partner has answered too (`holdsUntilAnswered`).
///
/// - At each look (`fetchMailbox`, the phone's listeners on its own user document and its couple's question): today's
///   question, asked for with `assignDailyQuestionCallable` when the phone has none or its question has expired (a
///   couple made mid-day). Once both have answered, the phone reads the partner's key from `devices/primary`, writes
///   its own one-time key wrapped to it (`releaseKeys/{partner}`), marks its answer `answerKeyReleased`, and reads the
///   key the partner released to it: then the partner's answer is an item, revealed by `openDirect`.
/// - On its answer timer (`message_every`), the phone answers today's question once (`composeDirect` seals it,
///   `postDirect` creates `answers/{uid}`).
/// - `acknowledge` marks its own answer `isRevealed` (the reveal screen shown): answers are kept, not deleted.
extension CloserApp {
    public var holdsUntilAnswered: Bool { true }

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

    public func composeDirect(_ message: DirectMessage, to friend: Friend, from session: Session, keys: BoxKeyPair) throws(CryptoError) -> SealedMessage? {
        let me = session.userID
        guard let today = phones.today(of: me), phones.answer(of: me, on: today.date) == nil else { return nil }
        let answer = CloserAnswer(questionId: today.questionId, text: Self.answerText(message.size, seq: message.seq), seq: message.seq,
                                  sentNanos: message.sentNanos)
        let sealed = try answer.seal(couple: today.couple, user: me)
        phones.answered(me, on: today, sealed: sealed)
        return SealedMessage(recipient: friend.userID, kind: .text, ciphertext: Array(sealed.payload.utf8), signature: Array(sealed.commitment.utf8))
    }

    /// An answer of about `size` bytes.
    static func answerText(_ size: Int, seq: UInt64) -> String {
        let words = ["we", "should", "plan", "a", "quiet", "weekend", "together", "more", "often", "honestly", "I", "loved", "that", "walk"]
        var out = "", i = Int(seq % 7)
        while out.utf8.count < max(8, size) {
            out += (out.isEmpty ? "" : " ") + words[i % words.count]
            i += 3
        }
        return out
    }

    /// `couples/{c}/daily_question/{date}/answers/{uid}`, created (never overwritten) with the sealed shape the rules ask.
    public func postDirect(_ message: SealedMessage, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> MailboxReceipt {
        let me = session.userID
        guard let today = phones.today(of: me) else { throw SupabaseError(kind: .unexpectedResponse, message: "no question to answer") }
        let fields: JSONValue = ["userId": ["stringValue": .string(me)], "questionId": ["stringValue": .string(today.questionId)],
                                 "answerDate": ["stringValue": .string(today.date)], "schemaVersion": ["integerValue": "3"],
                                 "encryptedPayload": ["stringValue": .string(String(decoding: message.ciphertext, as: UTF8.self))],
                                 "commitmentHash": ["stringValue": .string(String(decoding: message.signature, as: UTF8.self))],
                                 "answerKeyReleased": ["booleanValue": false], "isRevealed": ["booleanValue": false]]
        let path = Self.answerPath(today, of: me)
        try await client(http).create(path, fields: fields, token: session.accessToken)
        let up = fields.text.utf8.count + path.utf8.count
        return MailboxReceipt(id: Self.answerID(today, of: me), createdAt: Date().timeIntervalSince1970, bytesUp: up, bytesDown: up + 200)
    }

    static func answerPath(_ q: CloserPhones.Question, of user: String) -> String { "couples/\(q.couple)/daily_question/\(q.date)/answers/\(user)" }
    static func answerID(_ q: CloserPhones.Question, of user: String) -> String { "\(q.couple)/\(q.date)/\(user)" }

    public func fetchMailbox(limit: Int, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> MailboxPage {
        let (me, token) = (session.userID, session.accessToken)
        let c = ListenedReads(client: client(http), listener: phones.listener(of: me))
        var up = c.listen(to: listenedPaths(of: me))
        // The listener on the phone's own document: pairing reads what it needs from it (`acceptedRequests`).
        let user = try await c.document("users/\(me)", token: token)
        guard let couple = FirebaseClient.string(user, "coupleId") else { return Self.page([], up: up, down: c.bytes) }
        if phones.couple(of: me) != couple {
            phones.joined(me, couple: couple)
        }
        // Today's question: a couple made mid-day asks for it, and so does a phone whose question has expired.
        // A listening phone hears of a new day's question on its couple's document (`currentQuestionId`).
        let coupleDoc = c.listener == nil ? nil : try await c.document("couples/\(couple)", token: token)
        if let coupleDoc { reminders.couple(couple, of: coupleDoc) }
        let current = coupleDoc.flatMap { FirebaseClient.string($0, "currentQuestionId") }
        if phones.today(of: me).map({ q in q.expiresAt <= Date().timeIntervalSince1970 || current.map { $0 != q.questionId } ?? false }) ?? true {
            let result = try await c.call("assignDailyQuestionCallable", .object([]), token: token)
            guard let date = result["date"]?.string, let qid = result["questionId"]?.string else {
                throw SupabaseError(kind: .unexpectedResponse, message: "assignDailyQuestionCallable: no date or questionId")
            }
            let doc = try await c.document("couples/\(couple)/daily_question/\(date)", token: token)
            let expires = (doc["expiresAt"]?["timestampValue"]?.string).flatMap { try? Date($0, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) }?.timeIntervalSince1970
            if phones.today(of: me)?.date != date {
                phones.assigned(me, CloserPhones.Question(couple: couple, date: date, questionId: qid, expiresAt: expires ?? .infinity))
            }
        }
        // The partner, from the couple's document, once; then what this look reads is listened to from now on: the
        // partner's answer and the key released to this phone.
        let partner = phones.partner(of: me, default: try await partnerOf(me, couple: couple, token: token, via: c))
        up += c.listen(to: listenedPaths(of: me))
        var items: [MailboxItem] = []
        var released: [String] = []
        for q in phones.openQuestions(of: me) {
            guard let partner else { break }
            // The reveal begins once both have answered: the partner's answer must be there.
            guard let theirs = try await c.documentIfAny(Self.answerPath(q, of: partner), token: token) else { continue }
            if !phones.hasReleased(me, q.date) {
                let point = FirebaseClient.string(try await c.document("users/\(partner)/devices/primary", token: token), "publicKey").flatMap(CloserAnswer.point)
                guard let point, let key = phones.answer(of: me, on: q.date)?.key else {
                    throw SupabaseError(kind: .unexpectedResponse, message: "users/\(partner)/devices/primary has no P-256 key")
                }
                let box: String
                do { box = try CloserAnswer.keybox(key, to: point, context: CloserAnswer.context(couple: q.couple, question: q.questionId, from: me, to: partner)) } catch {
                    throw SupabaseError(kind: .unexpectedResponse, message: "cannot wrap the answer key: \(error)")
                }
                try await c.client.create(Self.answerPath(q, of: me) + "/releaseKeys/\(partner)", fields: ["encryptedAnswerKey": ["stringValue": .string(box)]], token: token)
                try await c.client.update(Self.answerPath(q, of: me), fields: ["answerKeyReleased": ["booleanValue": true]], token: token)
                phones.released(me, q.date)
                released.append(Self.answerID(q, of: me))
                c.spent(up: box.utf8.count + 2 * (token.utf8.count + 300), down: 1_400)
            }
            guard let keybox = try await c.documentIfAny(Self.answerPath(q, of: partner) + "/releaseKeys/\(me)", token: token),
                  let box = FirebaseClient.string(keybox.fields, "encryptedAnswerKey"),
                  let payload = FirebaseClient.string(theirs.fields, "encryptedPayload"),
                  let commitment = FirebaseClient.string(theirs.fields, "commitmentHash") else { continue }
            // Revealable from when the partner released its key: the later of the two answers' writes, or after.
            let written = (theirs.fields["createdAt"]?["timestampValue"]?.string).flatMap { try? Date($0, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) }?.timeIntervalSince1970
            let since = max(written ?? theirs.created, phones.answer(of: me, on: q.date)?.at ?? 0)
            let packed = JSONValue(["payload": .string(payload), "commitment": .string(commitment), "keybox": .string(box),
                                    "questionId": .string(q.questionId)])
            items.append(MailboxItem(id: Self.answerID(q, of: partner), sender: partner, createdAt: since,
                                     sealed: SealedMessage(recipient: me, kind: .text, ciphertext: Array(packed.text.utf8), signature: [])))
        }
        return Self.page(items, up: up + c.bytesUp, down: c.bytes, released: released)
    }

    static func page(_ items: [MailboxItem], up: Int, down: Int, released: [String] = []) -> MailboxPage {
        var page = MailboxPage(items: items, bytesUp: up, bytesDown: down)
        page.released = released
        return page
    }

    /// What the phone listens to: its own user document; in a couple, its couple's document, today's question, and for today and each day it
    /// has answered and not yet revealed, its partner's answer and the key the partner releases to it (the app shows
    /// "your partner answered" before its user has).
    func listenedPaths(of me: String) -> Set<String> {
        var paths: Set<String> = ["users/\(me)"]
        guard let couple = phones.couple(of: me) else { return paths }
        let today = phones.today(of: me)
        paths.insert("couples/\(couple)")
        if let today { paths.insert("couples/\(couple)/daily_question/\(today.date)") }
        guard let partner = phones.partner(of: me, default: nil) else { return paths }
        for q in phones.openQuestions(of: me) + (today.map { [$0] } ?? []) {
            paths.insert(Self.answerPath(q, of: partner))
            paths.insert(Self.answerPath(q, of: partner) + "/releaseKeys/\(me)")
        }
        return paths
    }

    /// The partner from the couple's document, read once.
    func partnerOf(_ me: String, couple: String, token: String, via c: ListenedReads) async throws(SupabaseError) -> String? {
        if let known = phones.partner(of: me, default: nil) { return known }
        return FirebaseClient.strings(try await c.document("couples/\(couple)", token: token), "userIds").first { $0 != me }
    }

    /// The reveal: the key the partner released to this phone unwrapped with its P-256 key, the sealed answer opened
    /// with it and checked against its commitment.
    public func openDirect(_ item: MailboxItem, from friend: Friend, keys: BoxKeyPair) throws(CryptoError) -> DirectMessage {
        let me = item.sealed.recipient
        let parts = item.id.split(separator: "/").map(String.init)
        guard parts.count == 3, let o = JSONScanner.parse(item.sealed.ciphertext), let payload = o["payload"]?.string,
              let commitment = o["commitment"]?.string, let box = o["keybox"]?.string, let question = o["questionId"]?.string else {
            throw CryptoError.badJSON("not a Closer reveal")
        }
        let (couple, author) = (parts[0], parts[2])
        let key = try CloserAnswer.openKeybox(box, with: phones.deviceKey(of: me),
                                              context: CloserAnswer.context(couple: couple, question: question, from: author, to: me))
        let answer = try CloserAnswer.reveal(payload: payload, commitment: commitment, key: key, couple: couple, question: question, author: author)
        return DirectMessage(kind: .text, seq: answer.seq, sentNanos: answer.sentNanos, size: answer.text.utf8.count)
    }

    /// The reveal screen shown: this phone's own answer marked `isRevealed` (reveal metadata, all the rules let change).
    public func acknowledge(_ id: String, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> MailboxReceipt {
        let parts = id.split(separator: "/").map(String.init)
        guard parts.count == 3 else { throw SupabaseError(kind: .unexpectedResponse, message: "not a Closer answer id: \(id)") }
        let path = "couples/\(parts[0])/daily_question/\(parts[1])/answers/\(session.userID)"
        try await client(http).update(path, fields: ["isRevealed": ["booleanValue": true]], token: session.accessToken)
        phones.revealed(session.userID, parts[1])
        return MailboxReceipt(bytesUp: path.utf8.count + 400, bytesDown: 600)
    }
}

/// What each Closer phone keeps on itself (its app's local storage): its P-256 device key (`UserKeyManager`), the
/// couple and today's question, each answer's one-time key until the reveal (`PendingAnswerKeyStore`), and which
/// days it has released and revealed.
final class CloserPhones: Sendable {
    struct Question: Sendable, Equatable {
        var couple: String
        var date: String
        var questionId: String
        var expiresAt: Double
    }

    struct Answer: Sendable {
        var key: [UInt8]
        var at: Double
        var released = false
        var revealed = false
    }

    private struct Phone {
        var deviceKey = ECIESP256.KeyPair()
        var couple: String?
        var partner: String?
        var questions: [String: Question] = [:]
        var today: Question?
        var answers: [String: Answer] = [:]
        var listener: FirestoreListener?
    }

    private let state = Mutex([String: Phone]())

    /// The phone's open listener, if it has one.
    func listener(of user: String) -> FirestoreListener? { state.withLock { s in s[user]?.listener.flatMap { $0.isOpen ? $0 : nil } } }
    func listening(_ user: String, _ listener: FirestoreListener) { state.withLock { $0[user, default: Phone()].listener = listener } }

    func deviceKey(of user: String) -> ECIESP256.KeyPair {
        state.withLock { s in
            if let p = s[user] { return p.deviceKey }
            s[user] = Phone()
            return s[user]!.deviceKey
        }
    }

    func couple(of user: String) -> String? { state.withLock { $0[user]?.couple } }
    func joined(_ user: String, couple: String) { state.withLock { $0[user, default: Phone()].couple = couple } }
    func partner(of user: String, default found: String?) -> String? {
        state.withLock { s in
            if let p = s[user]?.partner { return p }
            s[user]?.partner = found
            return found
        }
    }

    func today(of user: String) -> Question? { state.withLock { $0[user]?.today } }
    func assigned(_ user: String, _ q: Question) {
        state.withLock { s in
            s[user, default: Phone()].today = q
            s[user]?.questions[q.date] = q
        }
    }

    func answer(of user: String, on date: String) -> Answer? { state.withLock { $0[user]?.answers[date] } }
    func answered(_ user: String, on q: Question, sealed: CloserAnswer.Sealed) {
        state.withLock { $0[user]?.answers[q.date] = Answer(key: sealed.key, at: Date().timeIntervalSince1970) }
    }

    func hasReleased(_ user: String, _ date: String) -> Bool { state.withLock { $0[user]?.answers[date]?.released ?? false } }
    func released(_ user: String, _ date: String) { state.withLock { $0[user]?.answers[date]?.released = true } }
    func revealed(_ user: String, _ date: String) { state.withLock { $0[user]?.answers[date]?.revealed = true } }

    /// The days this phone has answered and not yet seen its partner's answer revealed, oldest first.
    func openQuestions(of user: String) -> [Question] {
        state.withLock { s in
            guard let p = s[user] else { return [] }
            return p.answers.filter { !$0.value.revealed }.keys.sorted().compactMap { p.questions[$0] }
        }
    }
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
            state.withLock { $0.received.insert("\(user)|\(couple)|\(kind)") }
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
                             Self.duration(30 * outcomeDay), Self.duration(reminderEvery))
            }
            return r
        }
    }

    static func duration(_ s: Double) -> String {
        s >= 3_600 && s.truncatingRemainder(dividingBy: 3_600) == 0 ? "\(Int(s / 3_600)) h"
            : s >= 60 && s.truncatingRemainder(dividingBy: 60) == 0 ? "\(Int(s / 60)) min" : String(format: "%g s", s)
    }
}
