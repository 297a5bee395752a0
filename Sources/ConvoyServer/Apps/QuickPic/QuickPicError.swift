import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// An answer of QuickPic's API that is not a success: `{"error": code, "message": text}` with its status
/// (docs/quickpic-api.md), and nothing else — no stack, no SQL, no username.
struct QuickPicError: Error, HTTPResponseError, Equatable {
    let status: HTTPResponse.Status
    let code: String
    let message: String
    /// Seconds, for 429.
    var retryAfter: Int?

    static func badRequest(_ message: String) -> QuickPicError { .init(status: .badRequest, code: "bad_request", message: message) }
    static let badSignature = QuickPicError(status: .badRequest, code: "bad_signature",
                                            message: "the signature does not verify with the sender's signing key")
    static let unauthorized = QuickPicError(status: .unauthorized, code: "unauthorized", message: "a valid access token is required")
    static let invalidCredentials = QuickPicError(status: .unauthorized, code: "invalid_credentials", message: "invalid username or password")
    static let invalidRefreshToken = QuickPicError(status: .unauthorized, code: "invalid_refresh_token",
                                                   message: "the refresh token is invalid, expired or revoked")
    static func forbidden(_ message: String) -> QuickPicError { .init(status: .forbidden, code: "forbidden", message: message) }
    static let notFriends = QuickPicError(status: .forbidden, code: "not_friends", message: "you can only message your friends")
    static func notFound(_ what: String) -> QuickPicError { .init(status: .notFound, code: "not_found", message: "\(what) not found") }
    static func conflict(_ code: String, _ message: String) -> QuickPicError { .init(status: .conflict, code: code, message: message) }
    static func tooLarge(_ message: String) -> QuickPicError { .init(status: .contentTooLarge, code: "payload_too_large", message: message) }
    static func rateLimited(after seconds: Double) -> QuickPicError {
        let s = max(1, Int(seconds.rounded(.up)))
        return .init(status: .tooManyRequests, code: "rate_limited", message: "too many failed logins; try again in \(s) s", retryAfter: s)
    }
    static let internalError = QuickPicError(status: .internalServerError, code: "internal", message: "internal server error")

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        // One order of keys, always: two refusals that mean the same are the same bytes.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = (try? encoder.encode(QuickPicErrorBody(error: code, message: message))) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

private struct QuickPicErrorBody: Encodable {
    var error: String
    var message: String
}

/// Every error leaves as QuickPic's body: its own as they are, the router's (no route, wrong method) as
/// `not_found` / `bad_request`, anything else as a bare `internal` (logged, never shown).
struct QuickPicErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as QuickPicError {
            throw error
        } catch let error as HTTPError {
            switch error.status {
            case .notFound: throw QuickPicError.notFound("route")
            case .methodNotAllowed: throw QuickPicError(status: .methodNotAllowed, code: "method_not_allowed", message: "method not allowed")
            case .contentTooLarge: throw QuickPicError.tooLarge("the request body is too large")
            case let s where (400..<500).contains(s.code): throw QuickPicError(status: s, code: "bad_request", message: "bad request")
            default:
                context.logger.error("quickpic: \(error.status.code) from \(request.method) \(request.uri.path)")
                throw QuickPicError.internalError
            }
        } catch {
            context.logger.error("quickpic: \(request.method) \(request.uri.path) failed: \(String(describing: error).prefix(300))")
            throw QuickPicError.internalError
        }
    }
}
