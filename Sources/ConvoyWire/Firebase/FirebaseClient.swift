import ConvoyJSON
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
                                    ["email": .string(email), "password": .string(password), "returnSecureToken": true]), email: email)
    }

    public func signIn(email: String, password: String) async throws(SupabaseError) -> Session {
        Self.session(try await post("/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
                                    ["email": .string(email), "password": .string(password), "returnSecureToken": true]), email: email)
    }

    /// Secure Token's refresh: a new ID token for the (long-lived) refresh token.
    public func refresh(_ session: Session) async throws(SupabaseError) -> Session {
        let o = try await post("/securetoken.googleapis.com/v1/token", ["grant_type": "refresh_token", "refresh_token": .string(session.refreshToken)])
        guard let id = o["id_token"]?.string, let uid = o["user_id"]?.string else {
            throw SupabaseError(kind: .unexpectedResponse, message: "securetoken: no id_token")
        }
        let ttl = Double(o["expires_in"]?.string ?? "3600") ?? 3600
        return Session(accessToken: id, refreshToken: o["refresh_token"]?.string ?? session.refreshToken,
                       expiresAt: Date().timeIntervalSince1970 + ttl, userID: uid, email: session.email)
    }

    // MARK: Callables

    /// Calls `function` with `data`; its `result`.
    public func call(_ function: String, _ data: JSONValue, token: String) async throws(SupabaseError) -> JSONValue {
        let o = try await post("/\(function)", ["data": data], token: token)
        guard let result = o["result"], case .object = result else {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(function): no result")
        }
        return result
    }

    // MARK: Firestore

    /// A document's fields as Firestore's typed values (`{"stringValue": …}`).
    public func document(_ path: String, token: String) async throws(SupabaseError) -> JSONValue {
        let r = try await send("GET", documentPath(path), body: nil, token: token)
        return JSONScanner.parse(r.body)?["fields"] ?? .object([])
    }

    /// Writes fields of a document (Firestore's PATCH: created if missing, given fields replaced).
    public func write(_ path: String, fields: JSONValue, token: String) async throws(SupabaseError) {
        let body: JSONValue = ["fields": fields]
        _ = try await send("PATCH", documentPath(path), body: Array(body.text.utf8), token: token)
    }

    /// A document's fields and when it was made (Unix seconds), or nil when there is none (404 `NOT_FOUND`).
    public func documentIfAny(_ path: String, token: String) async throws(SupabaseError) -> (fields: JSONValue, created: Double)? {
        do {
            let r = try await send("GET", documentPath(path), body: nil, token: token)
            let o = JSONScanner.parse(r.body)
            let created = (o?["createTime"]?.string).flatMap { try? Date($0, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) }?.timeIntervalSince1970
            return (o?["fields"] ?? .object([]), created ?? Date().timeIntervalSince1970)
        } catch {
            if case .http(404, _) = error.kind { return nil }
            throw error
        }
    }

    /// Creates a document, refused (409 `ALREADY_EXISTS`) if it is there already (`currentDocument.exists=false`).
    public func create(_ path: String, fields: JSONValue, token: String) async throws(SupabaseError) {
        let body: JSONValue = ["fields": fields]
        _ = try await send("PATCH", documentPath(path) + "?currentDocument.exists=false", body: Array(body.text.utf8), token: token)
    }

    /// Changes only `fields`' keys of a document (`updateMask.fieldPaths`).
    public func update(_ path: String, fields: JSONValue, token: String) async throws(SupabaseError) {
        let mask = fields.members.map { "updateMask.fieldPaths=\($0.key)" }.joined(separator: "&")
        let body: JSONValue = ["fields": fields]
        _ = try await send("PATCH", documentPath(path) + "?" + mask, body: Array(body.text.utf8), token: token)
    }

    public func documentPath(_ path: String) -> String { "/v1/projects/\(project)/databases/(default)/documents/\(path)" }

    /// A typed value's text (`stringValue`), or nil.
    public static func string(_ fields: JSONValue, _ key: String) -> String? {
        fields[key]?["stringValue"]?.string
    }

    /// A typed array of strings.
    public static func strings(_ fields: JSONValue, _ key: String) -> [String] {
        (fields[key]?["arrayValue"]?["values"]?.items ?? []).compactMap { $0["stringValue"]?.string }
    }

    // MARK: Transport

    func post(_ path: String, _ object: JSONValue, token: String? = nil) async throws(SupabaseError) -> JSONValue {
        let r = try await send("POST", path, body: Array(object.text.utf8), token: token)
        guard let o = JSONScanner.parse(r.body), case .object = o else {
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
            let e = JSONScanner.parse(response.body)?["error"]
            throw SupabaseError(kind: .http(status: response.status, code: e?["status"]?.string),
                                message: e?["message"]?.string ?? String(decoding: response.body.prefix(300), as: UTF8.self))
        }
        return response
    }

    static func session(_ o: JSONValue, email: String?) -> Session {
        let ttl = Double(o["expiresIn"]?.string ?? "3600") ?? 3600
        return Session(accessToken: o["idToken"]?.string ?? "", refreshToken: o["refreshToken"]?.string ?? "",
                       expiresAt: Date().timeIntervalSince1970 + ttl, userID: o["localId"]?.string ?? "", email: email)
    }
}
