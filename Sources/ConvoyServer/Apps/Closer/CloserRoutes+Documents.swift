import ConvoyJSON
import ConvoySodium
import ConvoyTime
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// Firestore's REST documents under the manual's rules (closer-engineering-manual.md, "Firestore security rules"): a
/// request's path and fields read, the rules applied as its caller (`access`, which Listen's reads share), and the
/// writes' hooks (listeners told, `onAnswerWritten`'s notification).
extension CloserRoutes {
    func document(_ request: Request, _ context: ClientRequestContext, method: HTTPRequest.Method) async throws -> Response {
        do {
            return try await documentAnswer(request, context, method: method)
        } catch let e as CloserError {
            throw e.firestore
        }
    }

    func documentAnswer(_ request: Request, _ context: ClientRequestContext, method: HTTPRequest.Method) async throws -> Response {
        let uid = try? await caller(request)
        let path = (context.parameters.getCatchAll()).map(String.init)
        let project = context.parameters.get("project") ?? ""
        guard project == tokens.project, context.parameters.get("database") == "(default)", path.count % 2 == 0, !path.isEmpty else {
            throw CloserError(code: "NOT_FOUND", message: "No such database or document path.")
        }
        guard let uid else { throw CloserError.permissionDenied }
        let name = "projects/\(project)/databases/(default)/documents/" + path.joined(separator: "/")
        var fields: [String: FirestoreValue]?
        if method == .patch {
            let body = try await json(request)
            guard let given = body["fields"], case .object(let members) = given else { throw CloserError.invalid("A document needs fields.") }
            var parsed: [String: FirestoreValue] = [:]
            for (k, v) in members.map({ ($0.key, $0.value) }) {
                guard let value = FirestoreValue.validated(v), !k.isEmpty, k.count <= 1500 else { throw CloserError.invalid("Invalid value for field \(k).") }
                parsed[k] = value
            }
            fields = parsed
        }
        let now = clock.date
        let query = DocumentQuery(request.uri.queryParameters)
        if method == .get { documentGets.add() }
        let answer = try store.with { s in try access(&s, path: path, method: method, fields: fields, query: query, uid: uid, now: now) }
        // A write reaches those listening to what it changed (Firestore's Listen, `CloserListeners`).
        if method != .get { wrote([CloserListeners.root(path)]) }
        // `onAnswerWritten` (onCreate): the partner is told by FCM.
        if method == .patch, query.mustNotExist, path.count == 6, path[0] == "couples", path[4] == "answers" {
            notifyPartnerAnswered(couple: path[1], date: path[3], author: path[5])
        }
        guard let answer else { return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{}"))) }
        let stamp = now.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let object: JSONValue = ["createTime": .string(stamp), "fields": JSONValue(answer.mapValues(\.value)), "name": .string(name),
                                 "updateTime": .string(stamp)]
        return Self.json(.ok, object)
    }

    /// What a request for the document at `path` does under the rules, as `uid`: the document afterwards (nil: none,
    /// or deleted), or `CloserError` (`NOT_FOUND`, `PERMISSION_DENIED`, a refused shape).
    func access(_ s: inout CloserStore.State, path: [String], method: HTTPRequest.Method, fields: [String: FirestoreValue]?,
                query: DocumentQuery, uid: String, now: Date) throws -> [String: FirestoreValue]? {
            let name = "projects/\(tokens.project)/databases/(default)/documents/" + path.joined(separator: "/")
            switch (path.count, path[0]) {
            case (2, "users"):
                let owner = path[1]
                guard owner == uid || (method == .get && settings.weak(.readableDocuments)) else { throw CloserError.permissionDenied }
                switch method {
                case .get:
                    guard let u = s.users[owner] else { throw CloserError(code: "NOT_FOUND", message: "Document not found: \(name)") }
                    return Self.userFields(u)
                case .patch:
                    guard let fields, fields["hasPremium"] == nil || settings.weak(.clientPremium) else { throw CloserError.permissionDenied }
                    if let premium = fields["hasPremium"] { s.users[owner]?.hasPremium = premium.value["booleanValue"]?.bool ?? false }
                    s.users[owner]?.fields.merge(fields.filter { $0.key != "hasPremium" }) { _, new in new }
                    return s.users[owner].map(Self.userFields)
                default: throw CloserError.permissionDenied
                }
            case (4, "users") where path[2] == "fcmTokens":
                // The owner's devices' registration tokens: the owner's alone, to read and write.
                let (owner, id) = (path[1], path[3])
                guard owner == uid, s.users[owner] != nil else { throw CloserError.permissionDenied }
                switch method {
                case .get:
                    guard let t = s.users[owner]?.fcmTokens[id] else { throw CloserError(code: "NOT_FOUND", message: "Document not found: \(name)") }
                    return t
                case .patch:
                    guard let fields, let token = fields["token"]?.value["stringValue"]?.string, Self.isRegistrationToken(token),
                          (s.users[owner]?.fcmTokens.count ?? 0) < 10 || s.users[owner]?.fcmTokens[id] != nil else {
                        throw CloserError.permissionDenied
                    }
                    s.users[owner]?.fcmTokens[id, default: [:]].merge(fields) { _, new in new }
                    return s.users[owner]?.fcmTokens[id]
                default:
                    s.users[owner]?.fcmTokens[id] = nil
                    return nil
                }
            case (4, "users") where path[2] == "devices":
                let (owner, device) = (path[1], path[3])
                let partner = s.users[uid]?.coupleId.flatMap { s.couples[$0] }?.userIds.contains(owner) ?? false
                switch method {
                case .get:
                    // The device's public key: its owner's, and its owner's current partner's to read (to wrap release keys).
                    guard owner == uid || partner || settings.weak(.readableDocuments), let d = s.users[owner]?.devices[device] else {
                        throw CloserError.permissionDenied
                    }
                    return d
                case .patch:
                    guard owner == uid, let fields else { throw CloserError.permissionDenied }
                    s.users[owner]?.devices[device, default: [:]].merge(fields) { _, new in new }
                    return s.users[owner]?.devices[device]
                default:
                    guard owner == uid else { throw CloserError.permissionDenied }
                    s.users[owner]?.devices[device] = nil
                    return nil
                }
            case (4, "couples"), (6, "couples"), (8, "couples"):
                return try questionDocument(&s, path: path, method: method, fields: fields, query: query, uid: uid, now: now)
            case (2, "couples"):
                guard var c = s.couples[path[1]], c.userIds.contains(uid) || (method == .get && settings.weak(.readableDocuments)) else {
                    throw CloserError.permissionDenied
                }
                switch method {
                case .get: return Self.coupleFields(c)
                case .patch where settings.weak(.clientCoupleWrites):
                    c.clientFields.merge(fields ?? [:]) { _, new in new }
                    if let streak = fields?["streakCount"], let n = streak.value["integerValue"]?.flatText.flatMap({ Int($0) }) { c.streakCount = n }
                    s.couples[c.id] = c
                    return Self.coupleFields(c)
                default: throw CloserError.permissionDenied  // never written by clients
                }
            case (2, "invites") where method == .patch && settings.weak(.clientInviteWrites):
                let invite = CloserStore.Invite(code: path[1], inviter: uid, status: "pending", createdAt: now,
                                                expiresAt: now.addingTimeInterval(settings.inviteTTL))
                s.invites[path[1]] = invite
                return Self.inviteFields(invite)
            case (2, "invites"):
                guard let i = s.invites[path[1]], i.inviter == uid || settings.weak(.readableInvites), method == .get else {
                    throw CloserError.permissionDenied  // reads: the inviter only; writes: never
                }
                var invite = i
                if invite.status == "pending", invite.expiresAt <= now { invite.status = "expired" }
                return Self.inviteFields(invite)
            default:
                throw CloserError.permissionDenied
            }
    }

    static func userFields(_ u: CloserStore.User) -> [String: FirestoreValue] {
        var f = u.fields
        f["email"] = .optional(u.email)
        f["coupleId"] = .optional(u.coupleId)
        f["hasPremium"] = .bool(u.hasPremium)
        return f
    }

    static func coupleFields(_ c: CloserStore.Couple) -> [String: FirestoreValue] {
        var f = c.clientFields
        f["id"] = .string(c.id)
        f["userIds"] = .strings(c.userIds)
        f["inviteCode"] = .string(c.inviteCode)
        f["createdAt"] = .timestamp(c.createdAt)
        f["streakCount"] = .integer(c.streakCount)
        f["encryptionVersion"] = .integer(c.encryptionVersion)
        f["currentQuestionId"] = .optional(c.currentQuestionId)
        f["lastAnsweredAt"] = c.lastAnsweredAt.map(FirestoreValue.timestamp) ?? .null
        f["wrappedCoupleKey"] = .optional(c.wrappedCoupleKey)
        f["kdfSalt"] = .optional(c.kdfSalt)
        f["kdfParams"] = .optional(c.kdfParams)
        return f
    }

    static func inviteFields(_ i: CloserStore.Invite) -> [String: FirestoreValue] {
        ["code": .string(i.code), "inviterUserId": .string(i.inviter), "status": .string(i.status), "createdAt": .timestamp(i.createdAt),
         "expiresAt": .timestamp(i.expiresAt), "wrappedCoupleKey": .optional(i.wrappedCoupleKey), "kdfSalt": .optional(i.kdfSalt),
         "kdfParams": .optional(i.kdfParams), "recoveryPhrase": .optional(i.recoveryPhrase)]
    }
}
