import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error response in the shape each Supabase service uses.
struct APIError: Error, HTTPResponseError {
    enum Shape: Sendable {
        /// PostgREST: `{"code","message","details","hint"}`.
        case postgrest(code: String, details: String?, hint: String?)
        /// GoTrue: `{"code":<status>,"error_code","msg"}`.
        case gotrue(errorCode: String)
        /// The API gateway: `{"message"}` (missing or unknown apikey).
        case gateway
    }

    let status: HTTPResponse.Status
    let message: String
    let shape: Shape

    /// PostgREST's code (SQLSTATE or PGRST…), or GoTrue's error code.
    var code: String? {
        switch shape {
        case .postgrest(let code, _, _): code
        case .gotrue(let errorCode): errorCode
        case .gateway: nil
        }
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var body: [String: Any] = [:]
        switch shape {
        case .postgrest(let code, let details, let hint):
            body = ["code": code, "message": message, "details": details ?? NSNull(), "hint": hint ?? NSNull()]
        case .gotrue(let errorCode):
            body = ["code": status.code, "error_code": errorCode, "msg": message]
        case .gateway:
            body = ["message": message]
        }
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func postgrest(_ status: HTTPResponse.Status, _ code: String, _ message: String,
                          details: String? = nil, hint: String? = nil) -> APIError {
        APIError(status: status, message: message, shape: .postgrest(code: code, details: details, hint: hint))
    }

    static func gotrue(_ status: HTTPResponse.Status, _ errorCode: String, _ message: String) -> APIError {
        APIError(status: status, message: message, shape: .gotrue(errorCode: errorCode))
    }
}
