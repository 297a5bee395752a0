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
