import ConvoyJSON
import ConvoyTime
import Foundation
import HTTPTypes
import Hummingbird

/// What a Firestore PATCH says beside its fields: `updateMask.fieldPaths` (only those fields change; without it the
/// document is replaced) and `currentDocument.exists=false` (create only: a document already there is refused).
struct DocumentQuery: Sendable {
    var mask: Set<String>?
    var mustNotExist = false

    init(mask: Set<String>? = nil, mustNotExist: Bool = false) { (self.mask, self.mustNotExist) = (mask, mustNotExist) }

    init(_ parameters: Hummingbird.Parameters) {
        let paths: [String] = parameters.getAll("updateMask.fieldPaths").map { String($0) }
        mask = paths.isEmpty ? nil : Set(paths)
        mustNotExist = parameters["currentDocument.exists"].map { String($0) } == "false"
    }
}

/// The daily question (closer-engineering-manual.md, "Daily question lifecycle", "Firestore security rules"):
/// `assignDailyQuestionCallable` for a couple made mid-day, the scheduled `assignDailyQuestion`, the documents
/// under `couples/{id}/daily_question/{date}` with the rules' shapes (sealed answers: `sealed:v1:` payload and
/// `sha256:` commitment, reveal metadata alone changing afterwards; release keys: `keybox:v1:`, create-only by the
/// answer's owner, readable by the named recipient alone), and the per-minute `scheduledOutcomesReminder`.
extension CloserRoutes {
    /// The rules' regex helpers.
    static func isSealedPayload(_ s: String) -> Bool { s.hasPrefix("sealed:v1:") && Self.isURLBase64(s.dropFirst(10), atLeast: 80) }
    static func isKeybox(_ s: String) -> Bool { s.hasPrefix("keybox:v1:") && Self.isURLBase64(s.dropFirst(10), atLeast: 120) }
    static func isCommitmentHash(_ s: String) -> Bool { s.hasPrefix("sha256:") && s.utf8.count == 50 && Self.isURLBase64(s.dropFirst(7), atLeast: 43) }
    static func isCiphertext(_ s: String) -> Bool {
        guard s.hasPrefix("enc:v1:") else { return false }
        let body = s.dropFirst(7).utf8
        let core = body.prefix { $0 != 0x3D }
        return !core.isEmpty && body.count - core.count <= 2 && body.dropFirst(core.count).allSatisfy { $0 == 0x3D }
            && core.allSatisfy { Self.isAlnum($0) || $0 == 0x2B || $0 == 0x2F }
    }

    static func isURLBase64(_ s: Substring, atLeast n: Int) -> Bool {
        s.utf8.count >= n && s.utf8.allSatisfy { Self.isAlnum($0) || $0 == 0x2D || $0 == 0x5F }
    }

    static func isAlnum(_ c: UInt8) -> Bool { (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) }

    /// The question catalogue's free, active questions (`questions/{id}`, admin-seeded).
    static let questionIDs = (1...120).map { String(format: "question_%03d", $0) }

    /// The date key a question assigned at `now` is filed under. With the manual's day, the function's own
    /// arithmetic: UTC plus `CST_OFFSET_HOURS = -6` (its DST bug kept); with a shorter day, each one counts as a
    /// calendar day from the server's start.
    func questionDate(at now: Date) -> String {
        let style = Date.ISO8601FormatStyle().year().month().day()
        guard settings.questionEvery != 86_400 else { return now.addingTimeInterval(-6 * 3_600).formatted(style) }
        let days = (now.timeIntervalSince(settings.started) / settings.questionEvery).rounded(.down)
        return settings.started.addingTimeInterval(-6 * 3_600 + days * 86_400).formatted(style)
    }

    /// `couples/{id}/daily_question/{today}`, made if missing (`docRef.create` catching ALREADY_EXISTS): the same for
    /// the scheduled function and the callable. Keeps the couple's last `questionsKept` days.
    static func assign(_ couple: inout CloserStore.Couple, date: String, now: Date, every: Double) -> CloserStore.DailyQuestion {
        if let q = couple.questions[date] { return q }
        let q = CloserStore.DailyQuestion(questionId: questionIDs.randomElement()!, date: date, assignedAt: now,
                                          expiresAt: now.addingTimeInterval(every))
        couple.questions[date] = q
        couple.currentQuestionId = q.questionId
        while couple.questions.count > CloserStore.questionsKept, let oldest = couple.questions.keys.min() { couple.questions[oldest] = nil }
        return q
    }

    /// `assignDailyQuestionCallable`: today's question for the caller's couple (made now if the couple has none).
    func assignDailyQuestion(_ request: Request) async throws -> Response {
        let uid = try await caller(request)
        _ = try await callData(request)
        let now = clock.date
        let date = questionDate(at: now)
        let (q, couple): (CloserStore.DailyQuestion, String) = try store.with { s in
            guard let id = s.users[uid]?.coupleId, var couple = s.couples[id] else { throw CloserError.precondition("You are not in a couple.") }
            let q = Self.assign(&couple, date: date, now: now, every: settings.questionEvery)
            s.couples[id] = couple
            return (q, id)
        }
        wrote(["couples/\(couple)"])
        return Self.json(.ok, ["result": ["date": .string(q.date), "questionId": .string(q.questionId)]])
    }

    /// The scheduled `assignDailyQuestion`: every couple gets today's question. How many were assigned.
    @discardableResult
    func assignDailyQuestions() -> Int {
        let now = clock.date
        let date = questionDate(at: now)
        let made: [String] = store.with { s in
            var made: [String] = []
            for id in Array(s.couples.keys) {
                guard var c = s.couples[id], c.questions[date] == nil else { continue }
                _ = Self.assign(&c, date: date, now: now, every: settings.questionEvery)
                s.couples[id] = c
                made.append(id)
            }
            return made
        }
        wrote(Set(made.map { "couples/\($0)" }))
        return made.count
    }

    /// The per-minute `scheduledOutcomesReminder`: it reads every couple, with no pagination (the manual's hot spot),
    /// and for each couple that has reached its 30-, 60- or 90-day mark (days of `settings.outcomeDay`) queues the
    /// outcome reminder for both partners once and sends it to their devices by FCM (`outcomeDate`: when the couple
    /// reached the mark). How many couples it read and how many reminders it queued.
    func remindOutcomes() -> (couples: Int, queued: Int) {
        let now = clock.date
        let day = settings.outcomeDay
        let stamp = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var due: [(user: String, couple: String, mark: Int, at: Date)] = []
        // Every couple read, from a snapshot: the scan holds no lock while it reads (Firestore's query does not stop the
        // app's other requests); what it found is written in one short step after.
        let couples = store.with { $0.couples }
        var found: [(couple: String, marks: [Int])] = []
        for c in couples.values {
            let days = now.timeIntervalSince(c.createdAt) / day
            guard days >= 30, !c.outcomesReminded.contains(90) else { continue }
            let marks = [30, 60, 90].filter { days >= Double($0) && !c.outcomesReminded.contains($0) }
            if !marks.isEmpty { found.append((c.id, marks)) }
        }
        store.with { s in
            for (id, marks) in found {
                guard var c = s.couples[id] else { continue }
                for mark in marks where c.outcomesReminded.insert(mark).inserted {
                    let at = c.createdAt.addingTimeInterval(Double(mark) * day)
                    for user in c.userIds {
                        let note: [String: FirestoreValue] = ["type": .string("outcome_day_\(mark)"), "createdAt": .timestamp(now),
                                                              "delivered": .bool(false), "payload": .init(value: ["mapValue": ["fields": ["coupleId": ["stringValue": .string(id)]]]])]
                        s.users[user]?.notifications.append(note)
                        if let n = s.users[user]?.notifications.count, n > CloserStore.notificationsKept { s.users[user]?.notifications.removeFirst() }
                        due.append((user, id, mark, at))
                    }
                }
                s.couples[id] = c
            }
        }
        let read = couples.count
        for d in due {
            messaging.send(to: tokens(of: d.user), data: ["type": "outcome_day_\(d.mark)", "coupleId": d.couple, "outcomeDate": d.at.formatted(stamp)],
                           title: "\(d.mark) days together", body: "How is it going? Tell us in a minute.")
        }
        return (read, due.count)
    }

    // MARK: Documents

    /// `couples/{c}/daily_question/{date}` (4 segments), `…/answers/{uid}` (6), `…/answers/{uid}/releaseKeys/{recipient}` (8).
    func questionDocument(_ s: inout CloserStore.State, path: [String], method: HTTPRequest.Method, fields: [String: FirestoreValue]?,
                          query: DocumentQuery, uid: String, now: Date) throws -> [String: FirestoreValue]? {
        guard path[2] == "daily_question", path.count == 4 || path[4] == "answers", path.count != 8 || path[6] == "releaseKeys",
              var couple = s.couples[path[1]] else { throw CloserError.permissionDenied }
        let member = couple.userIds.contains(uid) || (method == .get && settings.weak(.readableDocuments))
        guard member else { throw CloserError.permissionDenied }
        let notFound = CloserError(code: "NOT_FOUND", message: "Document not found: \(path.joined(separator: "/"))")
        guard var q = couple.questions[path[3]] else {
            if method == .get { throw notFound }
            throw CloserError.permissionDenied  // nothing to answer: the question is the server's to write
        }
        defer { couple.questions[q.date] = q; s.couples[couple.id] = couple }
        switch path.count {
        case 4:
            guard method == .get else { throw CloserError.permissionDenied }  // server-only writes
            return ["questionId": .string(q.questionId), "date": .string(q.date), "assignedAt": .timestamp(q.assignedAt),
                    "expiresAt": .timestamp(q.expiresAt)]
        case 6:
            let owner = path[5]
            switch method {
            case .get:
                // The sealed answer is readable by both partners (the reveal's first step looks for the partner's);
                // its content opens only with the key its author releases.
                guard let answer = q.answers[owner] else { throw notFound }
                return answer
            case .patch:
                let loose = settings.weak(.looseAnswers)
                guard owner == uid || loose, let fields else { throw CloserError.permissionDenied }
                if let old = q.answers[owner] {
                    if query.mustNotExist { throw CloserError(code: "ALREADY_EXISTS", message: "Document already exists: \(path.joined(separator: "/"))") }
                    q.answers[owner] = loose ? old.merging(fields) { $1 } : try Self.revealUpdate(old, fields, mask: query.mask)
                } else {
                    try Self.checkAnswer(fields, owner: owner, question: q, couple: couple)
                    var stored = fields
                    stored["createdAt"] = .timestamp(now)  // the server's timestamp, as FieldValue.serverTimestamp() writes it
                    q.answers[owner] = stored
                    couple.lastAnsweredAt = now
                }
                return q.answers[owner]
            default: throw CloserError.permissionDenied
            }
        default:
            let (owner, recipient) = (path[5], path[7])
            switch method {
            case .get:
                guard recipient == uid || settings.weak(.readableDocuments) else { throw CloserError.permissionDenied }
                guard let key = q.releaseKeys[owner]?[recipient] else { throw notFound }
                return key
            case .patch:
                // Create-only, by the answer's owner, for its partner, once its own answer is there; a keybox shape.
                let loose = settings.weak(.looseAnswers)
                guard loose || owner == uid && recipient != uid && couple.userIds.contains(recipient) && q.answers[owner] != nil
                        && q.releaseKeys[owner]?[recipient] == nil,
                      let fields, let box = fields["encryptedAnswerKey"]?.value["stringValue"]?.string, Self.isKeybox(box) else {
                    throw CloserError.permissionDenied
                }
                q.releaseKeys[owner, default: [:]][recipient] = fields
                return fields
            default: throw CloserError.permissionDenied
            }
        }
    }

    /// The rules' create shapes: sealed (`schemaVersion` 3: `sealed:v1:` payload, `sha256:` commitment, key not yet
    /// released) or legacy (`enc:v1:` ciphertext; plaintext only for a couple below encryption version 1).
    static func checkAnswer(_ f: [String: FirestoreValue], owner: String, question q: CloserStore.DailyQuestion,
                            couple: CloserStore.Couple) throws {
        func text(_ k: String) -> String? { f[k]?.value["stringValue"]?.string }
        guard text("userId") == owner, text("questionId") == q.questionId else { throw CloserError.permissionDenied }
        let version = f["schemaVersion"]?.value["integerValue"]?.flatText.flatMap { Int($0) }
        if version == 3 {
            guard let payload = text("encryptedPayload"), isSealedPayload(payload), let hash = text("commitmentHash"), isCommitmentHash(hash),
                  f["answerKeyReleased"]?.value["booleanValue"]?.bool == false else { throw CloserError.permissionDenied }
        } else if let cipher = text("encryptedAnswer") {
            guard isCiphertext(cipher) else { throw CloserError.permissionDenied }
        } else {
            guard couple.encryptionVersion < 1, text("answer") != nil else { throw CloserError.permissionDenied }
        }
    }

    /// After creation only the reveal metadata may change (`isSealedAnswerUpdate`).
    static func revealUpdate(_ old: [String: FirestoreValue], _ given: [String: FirestoreValue], mask: Set<String>?) throws -> [String: FirestoreValue] {
        var new = old
        if let mask {
            for k in mask { new[k] = given[k] }
        } else {
            new = given
        }
        new["createdAt"] = old["createdAt"]
        let changed = Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }
        guard changed.isSubset(of: ["isRevealed", "answerKeyReleased", "updatedAt"]) else { throw CloserError.permissionDenied }
        return new
    }
}
