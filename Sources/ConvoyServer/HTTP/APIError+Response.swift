import ConvoyJSON
import HTTPTypes
import Hummingbird
import NIOCore

/// An `APIError` as Hummingbird writes it: its status, and its body in the
/// shape of the service that answers.
extension APIError: HTTPResponseError {
    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body: JSONValue = switch shape {
        case .postgrest(let code, let details, let hint):
            ["code": .string(code), "details": JSONValue(details), "hint": JSONValue(hint), "message": .string(message)]
        case .gotrue(let errorCode):
            ["code": JSONValue(status.code), "error_code": .string(errorCode), "msg": .string(message)]
        case .gateway:
            ["message": .string(message)]
        }
        let data = Array(body.text.utf8)
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers,
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
