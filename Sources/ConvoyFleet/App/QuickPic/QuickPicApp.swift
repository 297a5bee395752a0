import ConvoyCrypto
import ConvoyFormats
import ConvoySodium
import ConvoyWire
import Foundation

/// QuickPic (quickpic-spec.md): E2EE 1:1 messages over a plain REST API (docs/quickpic-api.md). A phone
/// registers with a username, a password and its keys, asks friends by username (who accept, reject or leave
/// it), sends each friend texts and photos sealed to the friend's X25519 key and signed with its own Ed25519
/// key, polls its mailbox, verifies before it decrypts, and acknowledges what it has shown (the server then
/// deletes it). Nothing here is Supabase: it speaks through `QuickPicClient`.
public struct QuickPicApp: MailboxApp, RegisteredApp {
    static let appName = "quickpic"
    static func make(_ options: AppOptions) -> QuickPicApp { QuickPicApp(pairing: options["pairing"].flatMap(Pairing.init(rawValue:)) ?? .setup) }

    public let name = "quickpic"

    /// When friends are made: in set-up, before the timeline (the default), or on the phones during the run, timed
    /// as load — look the friend up, ask, the friend sees it in `GET /friends/requests` and accepts (or rejects).
    public enum Pairing: String, Sendable, CaseIterable {
        case setup, run
    }

    public var pairing: Pairing

    public init(pairing: Pairing = .setup) { self.pairing = pairing }

    /// The scenario's mode: `pairing: setup|run`.
    static let modes: [(option: String, values: [String])] = [("pairing", Pairing.allCases.map(\.rawValue))]

    /// What the signing key is derived from the device's X25519 key with (`SigningKeyPair(derivedFrom:context:)`).
    static let signingContext = "QuickPic Ed25519 signing key v1"

    /// A device's Ed25519 signing key pair, derived from its X25519 key pair.
    static func signing(_ keys: BoxKeyPair) throws(CryptoError) -> SigningKeyPair {
        try SigningKeyPair(derivedFrom: keys, context: signingContext)
    }

    /// The username for a run's account: the email's local part (lowercase, at most 32 of `[a-z0-9_.-]`), or,
    /// when that is too long, a digest of it.
    static func username(_ email: String) -> String {
        let local = String(email.lowercased().prefix { $0 != "@" }).filter { $0.isLetter || $0.isNumber || "_.-".contains($0) }
        if local.count >= 3, local.count <= 32, local.allSatisfy(\.isASCII) { return local }
        let digest = (try? HMACSHA256.authenticate(Array(email.utf8), key: Array("quickpic username".utf8))) ?? []
        return "cvy" + digest.prefix(14).map { String(format: "%02x", $0) }.joined().prefix(28)
    }

    // MARK: Accounts

    public func signUp(email: String, password: String, keys: BoxKeyPair, adminKey: String?,
                       via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        let signing: SigningKeyPair
        do { signing = try Self.signing(keys) } catch {
            throw SupabaseError(kind: .unexpectedResponse, message: "cannot derive the signing key: \(error)")
        }
        return try await QuickPicClient(http).register(QuickPic.Register(username: Self.username(email), password: password,
                                                                         publicKey: keys.publicKey.base64, signingKey: signing.publicKey.base64)).session
    }

    /// Nothing: registration carried the keys, so an account that exists has them.
    public func finishSignUp(keys: BoxKeyPair, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {}

    public func signIn(email: String, password: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        try await QuickPicClient(http).login(username: Self.username(email), password: password).0
    }

    public func refresh(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        try await QuickPicClient(http).refresh(session.refreshToken).0
    }

    public func signOut(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        _ = try await QuickPicClient(http).logout(session)
    }

    // MARK: Friends

    /// The inviter asks by username; the invitee accepts, or rejects (`declined`), or leaves it pending.
    public func befriend(_ request: FriendRequest, via http: SupabaseHTTP) async throws(SupabaseError) {
        let client = QuickPicClient(http)
        guard let username = request.invitee.email else {
            throw SupabaseError(kind: .unexpectedResponse, message: "the invitee's session has no username")
        }
        let (asked, _) = try await client.requestFriend(username, token: request.inviter.accessToken)
        if request.pending { return }
        if request.declined {
            _ = try await client.reject(asked.id, token: request.invitee.accessToken)
        } else {
            _ = try await client.accept(asked.id, token: request.invitee.accessToken)
        }
    }

    public func activeFriendships(token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        try await QuickPicClient(http).friends(token: token).0.count
    }

    /// Friends' X25519 keys, as `GET /friends` lists them (a user who is not a friend is not there).
    public func publicKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: PublicKey] {
        try await friendKeys(of: userIDs, token: token, via: http).compactMapValues(\.box)
    }

    /// Both keys of each friend, from the one `GET /friends` the app makes.
    public func friendKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: FriendKeys] {
        let wanted = Set(userIDs)
        var out: [String: FriendKeys] = [:]
        for friend in try await QuickPicClient(http).friends(token: token).0 where wanted.contains(friend.id) {
            guard let box = try? PublicKey(base64: friend.publicKey), let signing = try? PublicKey(base64: friend.signingKey) else {
                throw SupabaseError(kind: .unexpectedResponse, message: "GET /friends: friend \(friend.id) has a key that is not 32 bytes of base64")
            }
            out[friend.id] = FriendKeys(box: box, signing: signing)
        }
        return out
    }

    // MARK: Friends during the run (`pairing: run`)

    public var pairsDuringRun: Bool { pairing == .run }

    /// `GET /users/:username`, as the app shows who it is about to ask ("Add friends by username").
    public func prepareRequest(_ invitee: Invitee, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool {
        let (user, _) = try await QuickPicClient(http).user(Self.username(invitee.email), token: token)
        guard user.id == invitee.userID else {
            throw SupabaseError(kind: .unexpectedResponse, message: "GET /users/\(Self.username(invitee.email)) answered user \(user.id), not \(invitee.userID)")
        }
        return true
    }

    /// `POST /friends/request` by username; the request's id.
    public func requestFriendship(to invitee: Invitee, preference: String, from session: Session,
                                  via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        try await QuickPicClient(http).requestFriend(Self.username(invitee.email), token: session.accessToken).0.id
    }

    public func acceptFriendship(_ id: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        _ = try await QuickPicClient(http).accept(id, token: token)
    }

    public func declineFriendship(_ id: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        _ = try await QuickPicClient(http).reject(id, token: token)
    }

    /// `GET /friends/requests`: the requests waiting for this phone's answer.
    public func pendingRequests(to userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] {
        try await QuickPicClient(http).incomingRequests(token: token).0.filter { $0.status == "pending" }
            .map { .requested(id: $0.id, from: $0.fromUserID) }
    }

    /// `GET /friends`: whoever is a friend now, whichever side asked (the phone keeps only those it asked).
    public func acceptedRequests(by userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] {
        try await QuickPicClient(http).friends(token: token).0.map { .accepted(id: "", by: $0.id) }
    }

    /// Registration published the keys: a signed-in account has them.
    public func hasPublishedKey(_ userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool { true }

    // MARK: Mailbox


    public func composeDirect(_ message: DirectMessage, to friend: Friend, from session: Session, keys: BoxKeyPair) throws(CryptoError) -> SealedMessage? {
        try sealDirect(message, to: friend, keys: keys)
    }

    /// `message` encoded as QuickPic encodes it (UTF-8 text, or a PNG gzipped), sealed to `friend` and signed by the sender.
    public func sealDirect(_ message: DirectMessage, to friend: Friend, keys: BoxKeyPair) throws(CryptoError) -> SealedMessage {
        guard let box = friend.publicKey else { throw CryptoError.badKey("\(friend.userID) has no X25519 key") }
        let content: [UInt8]
        do { content = try QuickPicContent.encode(message, seed: message.seq &* 0x9E37_79B9 ^ UInt64(message.sentNanos)) } catch {
            throw CryptoError.badJSON("cannot encode the \(message.kind.rawValue): \(error)")
        }
        let sealed = try QuickPicMessage.seal(content, contentType: message.kind == .photo ? .image : .text, to: box,
                                              signedBy: try Self.signing(keys))
        return SealedMessage(recipient: friend.userID, kind: message.kind, ciphertext: sealed.encryptedContent, signature: sealed.signature)
    }

    public func postDirect(_ message: SealedMessage, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> MailboxReceipt {
        let body = QuickPic.Outgoing(toUserID: message.recipient, encryptedContent: Data(message.ciphertext).base64EncodedString(),
                                     contentType: message.kind == .photo ? "image" : "text", signature: Data(message.signature).base64EncodedString())
        let (stored, x) = try await QuickPicClient(http).send(body, token: session.accessToken)
        return MailboxReceipt(id: stored.id, createdAt: QuickPic.unixSeconds(stored.createdAt), bytesUp: x.sent, bytesDown: x.received)
    }

    public func fetchMailbox(limit: Int, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> MailboxPage {
        let (messages, x) = try await QuickPicClient(http).messages(limit: limit, token: session.accessToken)
        var items: [MailboxItem] = []
        var malformed = 0
        for m in messages {
            guard let kind: DirectMessage.Kind = m.contentType == "image" ? .photo : m.contentType == "text" ? .text : nil,
                  let ciphertext = Data(base64Encoded: m.encryptedContent), let signature = Data(base64Encoded: m.signature),
                  let created = QuickPic.unixSeconds(m.createdAt)
            else {
                malformed += 1
                continue
            }
            items.append(MailboxItem(id: m.id, sender: m.fromUserID, createdAt: created,
                                     sealed: SealedMessage(recipient: m.toUserID, kind: kind, ciphertext: Array(ciphertext), signature: Array(signature))))
        }
        return MailboxPage(items: items, malformed: malformed, bytesUp: x.sent, bytesDown: x.received)
    }

    /// Signature first (with the friend's published signing key), then the key wrap and the content, then the content against its label.
    public func openDirect(_ item: MailboxItem, from friend: Friend, keys: BoxKeyPair) throws(CryptoError) -> DirectMessage {
        guard let signingKey = friend.signingKey else { throw CryptoError.badKey("no signing key known for \(friend.userID)") }
        let message = QuickPicMessage(encryptedContent: item.sealed.ciphertext, contentType: item.sealed.kind == .photo ? .image : .text,
                                      signature: item.sealed.signature)
        let content = try message.open(with: keys, from: signingKey)
        do { return try QuickPicContent.decode(content, kind: item.sealed.kind) } catch {
            throw CryptoError.badJSON("the decrypted \(item.sealed.kind.rawValue) is not one: \(error)")
        }
    }

    public func acknowledge(_ id: String, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> MailboxReceipt {
        let x = try await QuickPicClient(http).ack(id, token: session.accessToken)
        return MailboxReceipt(id: id, bytesUp: x.sent, bytesDown: x.received)
    }
}
