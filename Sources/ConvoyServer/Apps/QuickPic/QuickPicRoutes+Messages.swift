import ConvoyFormats
import ConvoySodium
import ConvoyTime
import Foundation
import Hummingbird

/// Messages: stored as the sender's opaque blob, listed to their recipient, deleted on the recipient's ACK.
/// The server reads none of them; it checks only who may send (friends), the size, and that the sender's
/// signing key signed the blob (it can tell who signed without reading anything).
extension QuickPicRoutes {
    /// The spec's 5 MB photo limit, on the decoded `encrypted_content`.
    static let contentLimit = 5 * 1024 * 1024
    /// A message's body: the content in base64 (4/3 of it) and the rest of the JSON.
    static let messageBodyLimit = contentLimit / 3 * 4 + 64 * 1024

    func send(_ request: Request) async throws -> Response {
        let me = try await caller(request)
        let body: QuickPic.Outgoing = try await decode(request, limit: Self.messageBodyLimit)
        var from = me.sub
        if let claimed = body.fromUserID, claimed.lowercased() != me.sub {
            guard settings.weak(.trustSender), QuickPicIDs.isUUID(claimed) else {
                throw QuickPicError.forbidden("from_user_id must be the caller's (or left out)")
            }
            from = claimed.lowercased()
        }
        guard QuickPicIDs.isUUID(body.toUserID) else { throw QuickPicError.badRequest("to_user_id: not a UUID") }
        var contentType = body.contentType
        if !["text", "image"].contains(contentType) {
            guard settings.weak(.lenientInput) else { throw QuickPicError.badRequest("content_type: text or image") }
            contentType = "text"
        }
        let decoded = try? Base64.decode(body.encryptedContent)
        guard let content = decoded ?? (settings.weak(.lenientInput) ? Array(body.encryptedContent.utf8) : nil), !content.isEmpty else {
            throw QuickPicError.badRequest("encrypted_content: base64, not empty")
        }
        guard content.count <= Self.contentLimit || settings.weak(.noSizeLimit) else {
            throw QuickPicError.tooLarge("encrypted_content is \(content.count) bytes; the limit is \(Self.contentLimit) (5 MiB)")
        }
        guard let signature = try? Base64.decode(body.signature) else { throw QuickPicError.badRequest("signature: base64") }
        let to = body.toUserID.lowercased()
        // Not a friend and no such user answer alike: a sender learns nothing of who exists.
        let allowed = settings.weak(.anyRecipient) ? try await store.user(id: to) != nil : try await store.areFriends(from, to)
        guard to != from, allowed, let sender = try await store.user(id: from) else {
            throw QuickPicError.notFriends
        }
        if !settings.weak(.unsigned), !(settings.weak(.lenientInput) && decoded == nil) {
            guard let key = try? PublicKey(bytes: sender.signingKey), (try? Signature.verify(signature, of: content, by: key)) != nil else {
                throw QuickPicError.badSignature
            }
        }
        let row = QuickPicMessageRow(id: QuickPicIDs.make(), from: from, to: to, content: content, contentType: contentType,
                                     signature: body.signature, createdAt: clock.date)
        try await store.insertMessage(row)
        return try Self.json(.created, QuickPic.Stored(id: row.id, createdAt: Self.time(row.createdAt)))
    }

    func mailbox(_ request: Request) async throws -> Response {
        let me = try await caller(request)
        var limit = 20
        if let text = request.uri.queryParameters["limit"] {
            guard let n = Int(text), (1...100).contains(n) else { throw QuickPicError.badRequest("limit: 1…100") }
            limit = n
        }
        var whose = me.sub
        if settings.weak(.readByQuery), let other = request.uri.queryParameters["to_user_id"].map(String.init), QuickPicIDs.isUUID(other) {
            whose = other.lowercased()
        }
        let messages = try await store.mailbox(whose, limit: limit).map {
            QuickPic.Message(id: $0.id, fromUserID: $0.from, toUserID: $0.to, encryptedContent: Base64.encode($0.content),
                             contentType: $0.contentType, signature: $0.signature, createdAt: Self.time($0.createdAt))
        }
        return try Self.json(.ok, messages)
    }

    func ack(_ request: Request, _ context: QuickPicContext) async throws -> Response {
        let me = try await caller(request)
        let id = context.parameters.get("id") ?? ""
        guard QuickPicIDs.isUUID(id) else { throw QuickPicError.badRequest("the message id is not a UUID") }
        // Someone else's message and a message that is gone answer alike.
        let recipient = settings.weak(.ackAny) ? try await store.recipient(ofMessage: id.lowercased()) ?? me.sub : me.sub
        guard try await store.acknowledge(id.lowercased(), recipient: recipient, keep: settings.weak(.keepAcked)) else {
            throw QuickPicError.notFound("message")
        }
        return Response(status: .noContent)
    }
}
