import ConvoyJSON
import Foundation

/// A Supabase project (or `convoy serve`): its URL and API keys.
public struct SupabaseTarget: Sendable {
    public var url: String
    public var anonKey: String
    /// Bypasses RLS: only for set-up and verification, never for a device.
    public var serviceKey: String?

    public init(url: String, anonKey: String, serviceKey: String? = nil) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.anonKey = anonKey
        self.serviceKey = serviceKey
    }

    /// `wss://…/realtime/v1/websocket?apikey=…&vsn=1.0.0` (ws:// for http://).
    public var realtimeURL: String {
        let ws = url.hasPrefix("https://") ? "wss://" + url.dropFirst(8) : "ws://" + url.dropFirst(url.hasPrefix("http://") ? 7 : 0)
        return ws + "/realtime/v1/websocket?apikey=\(anonKey)&vsn=1.0.0"
    }
}

/// A signed-in user's tokens. Secrets: its description leaves them out.
public struct Session: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { "Session(user \(userID), expires at \(expiresAt), tokens redacted)" }
    public var debugDescription: String { description }

    public var accessToken: String
    public var refreshToken: String
    /// Unix seconds.
    public var expiresAt: Double
    public var userID: String
    public var email: String?
}

/// Why a Supabase call failed: the transport, or the service's own error
/// (PostgREST's `code`/`message`, GoTrue's `error_code`/`msg`).
public struct SupabaseError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case wire(WireError.Kind)
        /// An HTTP error status with the service's code (SQLSTATE, PGRST…, or GoTrue's error_code).
        case http(status: Int, code: String?)
        /// A 2xx response that is not what the API documents.
        case unexpectedResponse
        /// A Realtime channel the message was for is not joined now: nothing was sent.
        case notJoined
    }

    public let kind: Kind
    public let message: String
    /// The request that failed, as method and path without its query (`POST /rest/v1/friendships`), where known.
    public var request: String?

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String {
        switch kind {
        case .wire: "transport: \(message)"
        case .http(let status, let code): "HTTP \(status)\(code.map { " \($0)" } ?? ""): \(message)"
        case .unexpectedResponse: "unexpected response: \(message)"
        case .notJoined: "not joined: \(message)"
        }
    }

    public var status: Int? {
        if case .http(let status, _) = kind { return status }
        return nil
    }

    public var code: String? {
        if case .http(_, let code) = kind { return code }
        return nil
    }

    /// No answer came, so the request may or may not have been carried out: the transfer failed or timed out,
    /// or a gateway said so (502, 503, 504).
    public var gotNoAnswer: Bool {
        switch kind {
        case .wire(.transport), .wire(.timeout): true
        case .http(let status, _): [502, 503, 504].contains(status)
        default: false
        }
    }

    static func wire(_ e: WireError) -> SupabaseError { SupabaseError(kind: .wire(e.kind), message: e.message) }

    static func from(_ r: HTTPResponse) -> SupabaseError {
        let object = JSONScanner.parse(r.body)
        let code = object?["code"]?.string ?? object?["error_code"]?.string
        let message = object?["message"]?.string ?? object?["msg"]?.string ?? String(decoding: r.body.prefix(300), as: UTF8.self)
        return SupabaseError(kind: .http(status: r.status, code: code), message: message)
    }
}

/// The requests every Supabase client makes: the engine, the target, and a
/// device's own connection when it has one.
public struct SupabaseHTTP: Sendable {
    public let engine: HTTPEngine
    public let target: SupabaseTarget
    public let connection: HTTPConnection?

    public init(engine: HTTPEngine, target: SupabaseTarget, connection: HTTPConnection? = nil) {
        self.engine = engine
        self.target = target
        self.connection = connection
    }

    /// Sends with `apikey` and, when given, `Authorization: Bearer`; a status
    /// of 300 or more is the service's error.
    /// `contentType` labels a body (JSON unless said otherwise); `timeout` and
    /// `progress` are the transfer's (`HTTPRequest`).
    func send(_ method: String, _ path: String, body: [UInt8]? = nil, token: String? = nil,
              headers: [(name: String, value: String)] = [], contentType: String = "application/json", timeout: Double = 30,
              progress: (@Sendable (HTTPProgress) -> Void)? = nil) async throws(SupabaseError) -> HTTPResponse {
        var all: [(name: String, value: String)] = [("apikey", target.anonKey)]
        if let token { all.append(("Authorization", "Bearer \(token)")) }
        if body != nil { all.append(("Content-Type", contentType)) }
        all += headers
        let response: HTTPResponse
        do {
            response = try await engine.send(HTTPRequest(method: method, url: target.url + path, headers: all, body: body, timeout: timeout,
                                                         progress: progress), on: connection)
        } catch {
            var failure = SupabaseError.wire(error)
            failure.request = Self.requestLine(method, path)
            throw failure
        }
        guard response.status < 300 else {
            var failure = SupabaseError.from(response)
            failure.request = Self.requestLine(method, path)
            throw failure
        }
        return response
    }

    /// `POST /rest/v1/friendships`: the query (filters with user ids, tokens never) left out.
    static func requestLine(_ method: String, _ path: String) -> String {
        "\(method) \(path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path)"
    }

    static func json(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        value.write(into: &out)
        return out
    }
}
