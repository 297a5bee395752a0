import Foundation

/// What Closer's phones speak (closer-engineering-manual.md): Firebase Auth's REST API (Identity Toolkit,
/// Secure Token), Cloud Functions' callable protocol (`POST /{function}` with `{"data": …}`, answering
/// `{"result": …}` or `{"error": {"status", "message"}}`) and Firestore's REST documents, on the libcurl
/// engine. Errors are `SupabaseError`s (the name is history): `.http(status, code)` with the canonical code
/// (`RESOURCE_EXHAUSTED`, `NOT_FOUND`, …).
public struct FirebaseClient: Sendable {
    public let engine: HTTPEngine
    public let url: String
    public let connection: HTTPConnection?
    /// The project id in document names.
    public let project: String

    public init(engine: HTTPEngine, url: String, project: String, connection: HTTPConnection? = nil) {
        (self.engine, self.project, self.connection) = (engine, project, connection)
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    public init(_ http: SupabaseHTTP, project: String) {
        self.init(engine: http.engine, url: http.target.url, project: project, connection: http.connection)
    }

    // MARK: Auth

    /// `accounts:signUp` with email and password (`returnSecureToken`).
    public func signUp(email: String, password: String) async throws(SupabaseError) -> Session {
        Self.session(try await post("/identitytoolkit.googleapis.com/v1/accounts:signUp",
                                    ["email": email, "password": password, "returnSecureToken": true]), email: email)
    }

    public func signIn(email: String, password: String) async throws(SupabaseError) -> Session {
        Self.session(try await post("/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
                                    ["email": email, "password": password, "returnSecureToken": true]), email: email)
    }

    /// Secure Token's refresh: a new ID token for the (long-lived) refresh token.
    public func refresh(_ session: Session) async throws(SupabaseError) -> Session {
        let o = try await post("/securetoken.googleapis.com/v1/token", ["grant_type": "refresh_token", "refresh_token": session.refreshToken])
        guard let id = o["id_token"] as? String, let uid = o["user_id"] as? String else {
            throw SupabaseError(kind: .unexpectedResponse, message: "securetoken: no id_token")
        }
        let ttl = Double(o["expires_in"] as? String ?? "3600") ?? 3600
        return Session(accessToken: id, refreshToken: o["refresh_token"] as? String ?? session.refreshToken,
                       expiresAt: Date().timeIntervalSince1970 + ttl, userID: uid, email: session.email)
    }

    // MARK: Callables

    /// Calls `function` with `data`; its `result`.
    public func call(_ function: String, _ data: [String: Any], token: String) async throws(SupabaseError) -> [String: Any] {
        let o = try await post("/\(function)", ["data": data], token: token)
        guard let result = o["result"] as? [String: Any] else {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(function): no result")
        }
        return result
    }

    // MARK: Firestore

    /// A document's fields as Firestore's typed values (`{"stringValue": …}`).
    public func document(_ path: String, token: String) async throws(SupabaseError) -> [String: Any] {
        let r = try await send("GET", documentPath(path), body: nil, token: token)
        return ((try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any])?["fields"] as? [String: Any] ?? [:]
    }

    /// Writes fields of a document (Firestore's PATCH: created if missing, given fields replaced).
    public func write(_ path: String, fields: [String: Any], token: String) async throws(SupabaseError) {
        let body = (try? JSONSerialization.data(withJSONObject: ["fields": fields])).map(Array.init)
        _ = try await send("PATCH", documentPath(path), body: body, token: token)
    }

    public func documentPath(_ path: String) -> String { "/v1/projects/\(project)/databases/(default)/documents/\(path)" }

    /// A typed value's text (`stringValue`), or nil.
    public static func string(_ fields: [String: Any], _ key: String) -> String? {
        (fields[key] as? [String: Any])?["stringValue"] as? String
    }

    /// A typed array of strings.
    public static func strings(_ fields: [String: Any], _ key: String) -> [String] {
        (((fields[key] as? [String: Any])?["arrayValue"] as? [String: Any])?["values"] as? [[String: Any]] ?? []).compactMap { $0["stringValue"] as? String }
    }

    // MARK: Transport

    func post(_ path: String, _ object: [String: Any], token: String? = nil) async throws(SupabaseError) -> [String: Any] {
        let body = (try? JSONSerialization.data(withJSONObject: object)).map(Array.init)
        let r = try await send("POST", path, body: body, token: token)
        guard let o = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] else {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(path): \(r.status) with a body that is not a JSON object")
        }
        return o
    }

    func send(_ method: String, _ path: String, body: [UInt8]?, token: String?) async throws(SupabaseError) -> HTTPResponse {
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let response: HTTPResponse
        do {
            response = try await engine.send(HTTPRequest(method: method, url: url + path, headers: headers, body: body, timeout: 30), on: connection)
        } catch {
            throw .wire(error)
        }
        guard response.status < 300 else {
            let e = ((try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any])?["error"] as? [String: Any]
            throw SupabaseError(kind: .http(status: response.status, code: e?["status"] as? String),
                                message: e?["message"] as? String ?? String(decoding: response.body.prefix(300), as: UTF8.self))
        }
        return response
    }

    static func session(_ o: [String: Any], email: String?) -> Session {
        let ttl = Double(o["expiresIn"] as? String ?? "3600") ?? 3600
        return Session(accessToken: o["idToken"] as? String ?? "", refreshToken: o["refreshToken"] as? String ?? "",
                       expiresAt: Date().timeIntervalSince1970 + ttl, userID: o["localId"] as? String ?? "", email: email)
    }
}
