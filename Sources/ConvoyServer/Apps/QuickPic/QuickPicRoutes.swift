import ConvoyFormats
import ConvoySodium
import ConvoyTime
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// A request's context for QuickPic: the client's address counts for the login limit.
typealias QuickPicContext = ClientRequestContext

/// QuickPic's REST API (docs/quickpic-api.md) over a `QuickPicStore`: auth, users, friends (here) and
/// messages (`QuickPicRoutes+Messages.swift`). Access is checked here, as the spec's Go handlers do it.
struct QuickPicRoutes: Sendable {
    let store: any QuickPicStore
    let tokens: QuickPicTokens
    let limiter: LoginLimiter
    let clock: any ConvoyClock
    let settings: QuickPicSettings
    /// Verified against for unknown usernames, so a login costs the same whether the user exists or not.
    let dummyHash: String

    /// Refresh tokens live this long (the spec's 7 days).
    static let refreshTTL: Double = 7 * 86_400

    func add(to router: Router<QuickPicContext>) {
        router.add(middleware: QuickPicErrorMiddleware())
        router.get("/health") { _, _ in try Self.json(.ok, ["status": "ok"]) }
        router.post("/auth/register") { request, _ in try await register(request) }
        router.post("/auth/login") { request, context in try await login(request, from: context.clientAddress) }
        router.post("/auth/refresh") { request, _ in try await refresh(request) }
        router.post("/auth/logout") { request, _ in try await logout(request) }
        router.get("/users/:username") { request, context in try await user(request, context) }
        router.post("/friends/request") { request, _ in try await requestFriend(request) }
        router.get("/friends/requests") { request, _ in try await incomingRequests(request) }
        router.post("/friends/accept") { request, _ in try await decide(request, accept: true) }
        router.post("/friends/reject") { request, _ in try await decide(request, accept: false) }
        router.get("/friends") { request, _ in try await friends(request) }
        router.post("/messages") { request, _ in try await send(request) }
        router.get("/messages") { request, _ in try await mailbox(request) }
        router.post("/messages/:id/ack") { request, context in try await ack(request, context) }
    }

    // MARK: Auth

    struct Credentials: Decodable {
        var username: String
        var password: String
    }

    func register(_ request: Request) async throws -> Response {
        let body: QuickPic.Register = try await decode(request)
        let username = try Self.validUsername(body.username)
        try Self.validPassword(body.password)
        let publicKey = try Self.key(body.publicKey, "public_key"), signingKey = try Self.key(body.signingKey, "signing_key")
        let hash: String
        let cost = settings.passwordHash, password = body.password
        do { hash = try await AuthService.hashing { try cost.hash(password) } } catch { throw QuickPicError.internalError }
        let user = QuickPicUserRow(id: QuickPicIDs.make(), username: username, publicKey: publicKey, signingKey: signingKey, createdAt: clock.date)
        guard try await store.insertUser(user, passwordHash: hash) else {
            throw QuickPicError.conflict("username_taken", "that username is taken")
        }
        return try await session(for: user, status: .created)
    }

    func login(_ request: Request, from address: String) async throws -> Response {
        let body: Credentials = try await decode(request)
        let username = body.username.lowercased()
        if !settings.weak(.noLoginLimit), let wait = limiter.retryAfter(username: username, address: address) {
            throw QuickPicError.rateLimited(after: wait)
        }
        let found = try await store.credentials(username: username)
        // The same Argon2id work whether the user exists or not: an unknown name is verified against a dummy
        // (a weakened server, `fast-unknown`, skips it). On NIO's pool for blocking work, as GoTrue's here.
        let (password, encoded) = (body.password, found?.hash ?? dummyHash)
        let matches = found == nil && settings.weak(.fastUnknown) ? false
            : try await AuthService.hashing { PasswordHash.verify(password, against: encoded) }
        if found == nil, settings.weak(.revealUsernames) {
            throw QuickPicError(status: .unauthorized, code: "unknown_user", message: "no such user")
        }
        guard let found, matches else {
            limiter.failed(username: username, address: address)
            throw QuickPicError.invalidCredentials
        }
        return try await session(for: found.user, status: .ok)
    }

    func refresh(_ request: Request) async throws -> Response {
        struct Body: Decodable { var refresh_token: String }
        let body: Body = try await decode(request)
        if settings.weak(.reusableRefresh) {
            guard let (userID, sessionID) = try await store.refreshOwner(QuickPicTokens.hash(body.refresh_token)),
                  let user = try await store.user(id: userID) else { throw QuickPicError.invalidRefreshToken }
            return try await session(for: user, sessionID: sessionID, refreshToken: body.refresh_token, status: .ok)
        }
        let fresh = QuickPicTokens.refreshToken()
        let now = clock.date
        let outcome = try await store.rotate(refreshHash: QuickPicTokens.hash(body.refresh_token), freshHash: fresh.hash,
                                             expiresAt: now.addingTimeInterval(Self.refreshTTL), now: now)
        guard case .rotated(let userID, let sessionID) = outcome, let user = try await store.user(id: userID) else {
            throw QuickPicError.invalidRefreshToken
        }
        return try await session(for: user, sessionID: sessionID, refreshToken: fresh.token, status: .ok)
    }

    func logout(_ request: Request) async throws -> Response {
        let me = try await caller(request)
        if !settings.weak(.reusableRefresh) { try await store.endSession(me.sid) }
        return Response(status: .noContent)
    }

    /// A new session (register, login), or the next token of `sessionID` (refresh).
    func session(for user: QuickPicUserRow, sessionID: String? = nil, refreshToken: String? = nil,
                 status: HTTPResponse.Status) async throws -> Response {
        let sid: String, refresh: String
        if let sessionID, let refreshToken {
            (sid, refresh) = (sessionID, refreshToken)
        } else {
            let fresh = QuickPicTokens.refreshToken()
            sid = QuickPicIDs.make()
            refresh = fresh.token
            let now = clock.date
            try await store.insertSession(id: sid, userID: user.id, refreshHash: fresh.hash, expiresAt: now.addingTimeInterval(Self.refreshTTL),
                                          now: now)
        }
        let (token, expiresAt) = try await tokens.accessToken(userID: user.id, sessionID: sid)
        return try Self.json(status, QuickPic.SessionBody(accessToken: token, tokenType: "bearer", expiresIn: tokens.ttl,
                                                          expiresAt: Double(expiresAt), refreshToken: refresh, user: Self.user(user)))
    }

    // MARK: Users and friends

    func user(_ request: Request, _ context: QuickPicContext) async throws -> Response {
        _ = try await caller(request)
        let name = (context.parameters.get("username") ?? "").lowercased()
        guard let user = try await store.user(username: name) else { throw QuickPicError.notFound("user") }
        return try Self.json(.ok, Self.user(user))
    }

    func requestFriend(_ request: Request) async throws -> Response {
        let me = try await caller(request)
        struct Body: Decodable { var username: String }
        let body: Body = try await decode(request)
        guard let them = try await store.user(username: body.username.lowercased()) else { throw QuickPicError.notFound("user") }
        guard them.id != me.sub else { throw QuickPicError.badRequest("you cannot befriend yourself") }
        switch try await store.requestFriend(id: QuickPicIDs.make(), from: me.sub, to: them.id, now: clock.date) {
        case .created(let r): return try Self.json(.created, Self.request(r))
        case .alreadyFriends: throw QuickPicError.conflict("already_friends", "you are already friends")
        case .pending: throw QuickPicError.conflict("request_exists", "a friend request between you is pending")
        }
    }

    func incomingRequests(_ request: Request) async throws -> Response {
        let me = try await caller(request)
        var whose = me.sub
        if settings.weak(.readByQuery), let other = request.uri.queryParameters["user_id"].map(String.init), QuickPicIDs.isUUID(other) {
            whose = other.lowercased()
        }
        return try Self.json(.ok, try await store.incomingRequests(whose).map(Self.request))
    }

    func decide(_ request: Request, accept: Bool) async throws -> Response {
        let me = try await caller(request)
        struct Body: Decodable { var request_id: String }
        let body: Body = try await decode(request)
        guard QuickPicIDs.isUUID(body.request_id) else { throw QuickPicError.badRequest("request_id: not a UUID") }
        var decider = me.sub
        if settings.weak(.decideAny), let to = try await store.addressee(ofRequest: body.request_id.lowercased()) { decider = to }
        switch try await store.decide(body.request_id.lowercased(), by: decider, accept: accept, friendshipID: QuickPicIDs.make(),
                                      now: clock.date) {
        case .accepted(let id, let a, let b, let at):
            return try Self.json(.ok, ["id": id, "user_a_id": a, "user_b_id": b, "created_at": Self.time(at)])
        case .rejected(let r): return try Self.json(.ok, Self.request(r))
        case .notFound: throw QuickPicError.notFound("friend request")
        case .alreadyDecided: throw QuickPicError.conflict("request_decided", "that request was already accepted or rejected")
        }
    }

    func friends(_ request: Request) async throws -> Response {
        let me = try await caller(request)
        return try Self.json(.ok, try await store.friends(me.sub).map {
            QuickPic.Friend(id: $0.user.id, username: $0.user.username, publicKey: Base64.encode($0.user.publicKey),
                            signingKey: Base64.encode($0.user.signingKey), since: Self.time($0.since))
        })
    }

    // MARK: Requests

    /// The bearer's claims, its session still live; 401 otherwise (the same for every reason).
    func caller(_ request: Request) async throws -> QuickPicTokens.Claims {
        guard let header = request.headers[.authorization] else { throw QuickPicError.unauthorized }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer",
              let claims = settings.weak(.unverifiedTokens) ? QuickPicTokens.unverified(String(parts[1])) : await tokens.verify(String(parts[1])),
              try await store.sessionIsLive(claims.sid)
        else { throw QuickPicError.unauthorized }
        return claims
    }

    /// The body decoded as `T`, within `limit` bytes; a clear 400 naming the field otherwise.
    func decode<T: Decodable>(_ request: Request, limit: Int? = nil) async throws -> T {
        let limit = limit ?? settings.bodyLimit
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw QuickPicError.tooLarge("the request body is over \(limit) bytes")
        }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: limit) } catch {
            throw QuickPicError.tooLarge("the request body is over \(limit) bytes")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let DecodingError.keyNotFound(key, _) {
            throw QuickPicError.badRequest("\(key.stringValue): required")
        } catch let DecodingError.typeMismatch(_, c), let DecodingError.valueNotFound(_, c) {
            throw QuickPicError.badRequest("\(c.codingPath.map(\.stringValue).joined(separator: ".")): wrong type")
        } catch {
            throw QuickPicError.badRequest("the body is not the JSON this endpoint takes")
        }
    }

    // MARK: Checks and shapes

    static func validUsername(_ raw: String) throws -> String {
        let name = raw.lowercased()
        guard (3...32).contains(name.utf8.count),
              name.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2E || $0 == 0x2D })
        else { throw QuickPicError.badRequest("username: 3–32 of a-z, 0-9, _ . -") }
        return name
    }

    static func validPassword(_ password: String) throws {
        guard (8...128).contains(password.utf8.count) else { throw QuickPicError.badRequest("password: 8–128 bytes") }
    }

    static func key(_ text: String, _ field: String) throws -> [UInt8] {
        guard let bytes = try? Base64.decode(text), bytes.count == 32 else {
            throw QuickPicError.badRequest("\(field): 32 bytes, base64")
        }
        return bytes
    }

    static func user(_ u: QuickPicUserRow) -> QuickPic.User {
        QuickPic.User(id: u.id, username: u.username, publicKey: Base64.encode(u.publicKey), signingKey: Base64.encode(u.signingKey),
                      createdAt: time(u.createdAt))
    }

    static func request(_ r: QuickPicRequestRow) -> QuickPic.Request {
        QuickPic.Request(id: r.id, fromUserID: r.fromUserID, fromUsername: r.fromUsername, toUserID: r.toUserID, status: r.status,
                         createdAt: time(r.createdAt))
    }

    /// RFC 3339 UTC with microseconds (`2026-11-25T18:40:00.123456Z`).
    static func time(_ date: Date) -> String {
        let text = Timestamps.format(date)
        return text.hasSuffix("+00:00") ? String(text.dropLast(6)) + "Z" : text
    }

    static func json<T: Encodable>(_ status: HTTPResponse.Status, _ value: T) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
