import ConvoyJSON
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error as Firebase answers it: a callable's `{"error": {"status": "NOT_FOUND", "message": …}}` with the
/// HTTP status the callable protocol gives each canonical code; Identity Toolkit's and Firestore's the same
/// shape with their `code` (the HTTP status) beside it.
struct CloserError: Error, HTTPResponseError, Equatable {
    /// Which service answers, for the body's shape: a callable's `{"error": {"message", "status"}}`, Identity
    /// Toolkit's `{"error": {"code", "message", "errors": [{message, domain, reason}]}}`, or Google APIs' (Firestore's)
    /// `{"error": {"code", "message", "status"}}`.
    enum Service: Sendable, Equatable { case callable, identityToolkit, firestore }

    /// The canonical code: `INVALID_ARGUMENT`, `UNAUTHENTICATED`, `PERMISSION_DENIED`, `NOT_FOUND`, …
    let code: String
    let message: String
    var retryAfter: Int?
    var service: Service = .callable

    init(code: String, message: String, retryAfter: Int? = nil, service: Service = .callable) {
        (self.code, self.message, self.retryAfter, self.service) = (code, message, retryAfter, service)
    }

    /// Identity Toolkit's error: its message is the reason (`EMAIL_EXISTS`, `INVALID_LOGIN_CREDENTIALS`).
    static func auth(_ reason: String) -> CloserError { .init(code: "INVALID_ARGUMENT", message: reason, service: .identityToolkit) }

    /// The same error as Firestore's REST API writes it.
    var firestore: CloserError { var e = self; e.service = .firestore; return e }

    var status: HTTPResponse.Status {
        switch code {
        case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE": .badRequest
        case "UNAUTHENTICATED": .unauthorized
        case "PERMISSION_DENIED": .forbidden
        case "NOT_FOUND": .notFound
        case "ALREADY_EXISTS", "ABORTED": .conflict
        case "RESOURCE_EXHAUSTED": .tooManyRequests
        case "UNIMPLEMENTED": .notImplemented
        case "UNAVAILABLE": .serviceUnavailable
        default: .internalServerError
        }
    }

    static func invalid(_ message: String) -> CloserError { .init(code: "INVALID_ARGUMENT", message: message) }
    static let unauthenticated = CloserError(code: "UNAUTHENTICATED", message: "The function must be called while authenticated.")
    static let permissionDenied = CloserError(code: "PERMISSION_DENIED", message: "Missing or insufficient permissions.")
    /// Unknown, expired and used codes alike (the manual's defence against enumeration).
    static let inviteNotFound = CloserError(code: "NOT_FOUND", message: "This invite code is invalid or has expired.")
    static func precondition(_ message: String) -> CloserError { .init(code: "FAILED_PRECONDITION", message: message) }
    static func exhausted(after seconds: Double) -> CloserError {
        let s = max(1, Int(seconds.rounded(.up)))
        return .init(code: "RESOURCE_EXHAUSTED", message: "Too many invite attempts. Try again later.", retryAfter: s)
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        let body: JSONValue = switch service {
        case .callable: ["error": ["message": .string(message), "status": .string(code)]]
        case .identityToolkit: ["error": ["code": JSONValue(Int(status.code)),
                                          "errors": [["domain": "global", "message": .string(message), "reason": "invalid"]],
                                          "message": .string(message)]]
        case .firestore: ["error": ["code": JSONValue(Int(status.code)), "message": .string(message), "status": .string(code)]]
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body.text)))
    }
}
