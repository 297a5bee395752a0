import ConvoyFormats
import Foundation

/// QuickPic's REST API (docs/quickpic-api.md) on the libcurl engine: JSON bodies through Codable, bearer
/// tokens, and the server's `{"error","message"}` as a `SupabaseError` (`.http(status, code)`: the name is
/// history, it is any backend's error). Each call says what it moved (`Exchange`), for the battery model.
public struct QuickPicClient: Sendable {
    public let engine: HTTPEngine
    /// The server's base URL, without a trailing slash.
    public let url: String
    public let connection: HTTPConnection?

    public init(engine: HTTPEngine, url: String, connection: HTTPConnection? = nil) {
        (self.engine, self.connection) = (engine, connection)
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    /// The same engine, server and connection as a Supabase client's (`convoy run`'s target).
    public init(_ http: SupabaseHTTP) { self.init(engine: http.engine, url: http.target.url, connection: http.connection) }

    /// What one call moved: request and response bytes (headers included, as libcurl counts them) and its round trip, seconds.
    public struct Exchange: Sendable, Equatable {
        public var sent: Int
        public var received: Int
        public var seconds: Double

        public init(sent: Int = 0, received: Int = 0, seconds: Double = 0) { (self.sent, self.received, self.seconds) = (sent, received, seconds) }
    }

    // MARK: Auth

    public func register(_ body: QuickPic.Register) async throws(SupabaseError) -> (session: Session, user: QuickPic.User, Exchange) {
        let (r, x) = try await send("POST", "/auth/register", json: body)
        let s: QuickPic.SessionBody = try decode(r)
        return (Self.session(s), s.user, x)
    }

    public func login(username: String, password: String) async throws(SupabaseError) -> (Session, Exchange) {
        let (r, x) = try await send("POST", "/auth/login", json: ["username": username, "password": password])
        return (Self.session(try decode(r)), x)
    }

    /// A new session for `refreshToken`, which is revoked by this (keep the new one).
    public func refresh(_ refreshToken: String) async throws(SupabaseError) -> (Session, Exchange) {
        let (r, x) = try await send("POST", "/auth/refresh", json: ["refresh_token": refreshToken])
        return (Self.session(try decode(r)), x)
    }

    /// Ends the session: its refresh token and its access tokens are refused from now on.
    public func logout(_ session: Session) async throws(SupabaseError) -> Exchange {
        try await send("POST", "/auth/logout", json: ["refresh_token": session.refreshToken], token: session.accessToken).1
    }

    // MARK: Users and friends

    public func user(_ username: String, token: String) async throws(SupabaseError) -> (QuickPic.User, Exchange) {
        let name = username.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? username
        let (r, x) = try await send("GET", "/users/\(name)", token: token)
        return (try decode(r), x)
    }

    public func requestFriend(_ username: String, token: String) async throws(SupabaseError) -> (QuickPic.Request, Exchange) {
        let (r, x) = try await send("POST", "/friends/request", json: ["username": username], token: token)
        return (try decode(r), x)
    }

    public func incomingRequests(token: String) async throws(SupabaseError) -> ([QuickPic.Request], Exchange) {
        let (r, x) = try await send("GET", "/friends/requests", token: token)
        return (try decode(r), x)
    }

    public func accept(_ requestID: String, token: String) async throws(SupabaseError) -> Exchange {
        try await send("POST", "/friends/accept", json: ["request_id": requestID], token: token).1
    }

    public func reject(_ requestID: String, token: String) async throws(SupabaseError) -> Exchange {
        try await send("POST", "/friends/reject", json: ["request_id": requestID], token: token).1
    }

    public func friends(token: String) async throws(SupabaseError) -> ([QuickPic.Friend], Exchange) {
        let (r, x) = try await send("GET", "/friends", token: token)
        return (try decode(r), x)
    }

    // MARK: Messages

    public func send(_ message: QuickPic.Outgoing, token: String, timeout: Double = 120) async throws(SupabaseError) -> (QuickPic.Stored, Exchange) {
        let (r, x) = try await send("POST", "/messages", json: message, token: token, timeout: timeout)
        return (try decode(r), x)
    }

    /// The caller's pending messages, oldest first (fetching deletes nothing).
    public func messages(limit: Int, token: String, timeout: Double = 120) async throws(SupabaseError) -> ([QuickPic.Message], Exchange) {
        let (r, x) = try await send("GET", "/messages?limit=\(limit)", token: token, timeout: timeout)
        return (try decode(r), x)
    }

    /// Acknowledges message `id`: the server deletes it.
    public func ack(_ id: String, token: String) async throws(SupabaseError) -> Exchange {
        try await send("POST", "/messages/\(id)/ack", token: token).1
    }

    // MARK: The wire

    func send(_ method: String, _ path: String, json: some Encodable, token: String? = nil,
              timeout: Double = 30) async throws(SupabaseError) -> (HTTPResponse, Exchange) {
        let body: [UInt8]
        do { body = Array(try JSONEncoder().encode(json)) } catch {
            throw SupabaseError(kind: .unexpectedResponse, message: "could not encode the request: \(error)")
        }
        return try await send(method, path, body: body, token: token, timeout: timeout)
    }

    func send(_ method: String, _ path: String, body: [UInt8]? = nil, token: String? = nil,
              timeout: Double = 30) async throws(SupabaseError) -> (HTTPResponse, Exchange) {
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let response: HTTPResponse
        do {
            response = try await engine.send(HTTPRequest(method: method, url: url + path, headers: headers, body: body, timeout: timeout),
                                             on: connection)
        } catch {
            throw .wire(error)
        }
        let exchange = Exchange(sent: response.timing.bytesSent, received: response.timing.bytesReceived, seconds: response.timing.total)
        guard response.status < 300 else {
            let e = try? JSONDecoder().decode(QuickPic.ErrorBody.self, from: Data(response.body))
            throw SupabaseError(kind: .http(status: response.status, code: e?.error),
                                message: e?.message ?? String(decoding: response.body.prefix(300), as: UTF8.self))
        }
        return (response, exchange)
    }

    func decode<T: Decodable>(_ r: HTTPResponse) throws(SupabaseError) -> T {
        do { return try JSONDecoder().decode(T.self, from: Data(r.body)) } catch {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(r.status) with a body that is not the API's \(T.self): \(error)")
        }
    }

    static func session(_ s: QuickPic.SessionBody) -> Session {
        Session(accessToken: s.accessToken, refreshToken: s.refreshToken,
                expiresAt: s.expiresAt ?? Date().timeIntervalSince1970 + s.expiresIn, userID: s.user.id, email: s.user.username)
    }
}
