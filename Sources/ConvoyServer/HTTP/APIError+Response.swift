import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An `APIError` as Hummingbird writes it: its status, and its body in the
/// shape of the service that answers.
extension APIError: HTTPResponseError {
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
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers,
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
