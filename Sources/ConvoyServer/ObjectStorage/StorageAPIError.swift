import ConvoyJSON
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error as Supabase Storage (storage-api) answers it:
/// `{"statusCode":"404","code":"NoSuchKey","error":"not_found","message":"Object not found"}`.
/// As storage-api's error handler does, the HTTP status is 400 for every
/// client error and 500 for server errors, whatever `statusCode` in the body
/// says (src/http/error-handler.ts: `userStatusCode`); only the JWT role
/// checks answer 403 themselves. Each case below is one of storage-api's
/// `ERRORS` (src/internal/errors/codes.ts), with its code, `error` and message.
struct StorageAPIError: Error, Equatable {
    /// The status in the body (`statusCode`, a string there).
    let statusCode: Int
    /// storage-api's `ErrorCode`.
    let code: String
    /// Its `error` (the code unless the error names another).
    let error: String
    let message: String
    /// The HTTP status of the response (see above).
    let httpStatus: HTTPResponse.Status
    /// Answer with `Connection: close`: the request's body was refused while it still came.
    var closeConnection = false

    init(_ statusCode: Int, _ code: String, error: String? = nil, _ message: String, httpStatus: HTTPResponse.Status? = nil) {
        self.statusCode = statusCode
        self.code = code
        self.error = error ?? code
        self.message = message
        self.httpStatus = httpStatus ?? (statusCode >= 500 ? .internalServerError : .badRequest)
    }

    static let noSuchKey = StorageAPIError(404, "NoSuchKey", error: "not_found", "Object not found")
    static let noSuchBucket = StorageAPIError(404, "NoSuchBucket", error: "Bucket not found", "Bucket not found")
    static let bucketAlreadyExists = StorageAPIError(409, "BucketAlreadyExists", error: "Duplicate", "The resource already exists")
    static let alreadyExists = StorageAPIError(409, "ResourceAlreadyExists", error: "Duplicate", "The resource already exists")
    static let entityTooLarge = StorageAPIError(413, "EntityTooLarge", error: "Payload too large",
                                                "The object exceeded the maximum allowed size")
    static let rlsViolation = accessDenied("new row violates row-level security policy")
    static let invalidSignature = StorageAPIError(400, "InvalidSignature", "Invalid signature")
    static let internalError = StorageAPIError(500, "InternalError", "Internal server error")

    static func accessDenied(_ message: String, httpStatus: HTTPResponse.Status? = nil) -> StorageAPIError {
        StorageAPIError(403, "AccessDenied", error: "Unauthorized", message, httpStatus: httpStatus)
    }

    static func invalidKey(_ key: String) -> StorageAPIError {
        StorageAPIError(400, "InvalidKey", "Invalid key: \(key.prefix(200))")
    }

    static func invalidBucketName(_ name: String) -> StorageAPIError {
        StorageAPIError(400, "InvalidBucketName", error: "Invalid Input", "Bucket name invalid")
    }

    static func invalidJWT(_ message: String) -> StorageAPIError { StorageAPIError(400, "InvalidJWT", message) }

    static func invalidRequest(_ message: String) -> StorageAPIError { StorageAPIError(400, "InvalidRequest", message) }

    static func invalidParameter(_ name: String) -> StorageAPIError {
        StorageAPIError(400, "InvalidParameter", "Invalid Parameter \(name)")
    }

    static func noContent(_ message: String = "No content provided") -> StorageAPIError { invalidRequest(message) }

    static func invalidMimeType(_ type: String) -> StorageAPIError {
        StorageAPIError(415, "InvalidMimeType", error: "invalid_mime_type", "mime type \(type.prefix(200)) is not supported")
    }

    /// The same error, answered with `Connection: close`.
    func closing() -> StorageAPIError {
        var copy = self
        copy.closeConnection = true
        return copy
    }
}

extension StorageAPIError: HTTPResponseError {
    var status: HTTPResponse.Status { httpStatus }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body: JSONValue = ["code": .string(code), "error": .string(error), "message": .string(message), "statusCode": .string(String(statusCode))]
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if closeConnection { headers[.connection] = "close" }
        return Response(status: httpStatus, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body.text)))
    }
}
