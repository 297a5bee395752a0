import HTTPTypes

/// An error an API call answers with, in the shape of the Supabase service
/// that answers it: PostgREST's, GoTrue's or the gateway's. Thrown by the
/// services and the stores; `APIError+Response` writes it as HTTP.
struct APIError: Error {
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
    /// Seconds a client should wait before it tries again (`Retry-After`, with a 429).
    var retryAfter: Int?

    /// PostgREST's code (SQLSTATE or PGRST…), or GoTrue's error code.
    var code: String? {
        switch shape {
        case .postgrest(let code, _, _): code
        case .gotrue(let errorCode): errorCode
        case .gateway: nil
        }
    }

    static func postgrest(_ status: HTTPResponse.Status, _ code: String, _ message: String,
                          details: String? = nil, hint: String? = nil) -> APIError {
        APIError(status: status, message: message, shape: .postgrest(code: code, details: details, hint: hint))
    }

    static func gotrue(_ status: HTTPResponse.Status, _ errorCode: String, _ message: String) -> APIError {
        APIError(status: status, message: message, shape: .gotrue(errorCode: errorCode))
    }

    static func gateway(_ status: HTTPResponse.Status, _ message: String) -> APIError {
        APIError(status: status, message: message, shape: .gateway)
    }
}
