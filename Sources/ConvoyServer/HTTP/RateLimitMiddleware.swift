import Foundation
import HTTPTypes
import Hummingbird

/// `RateLimits` in front of the routes: a request over a limit is refused with 429, `Retry-After` (whole
/// seconds) and the body of the service that would answer — GoTrue's `over_request_rate_limit` on
/// `/auth/v1`, PostgREST's shape (code `PT429`, as a function raising SQLSTATE PT429 answers) elsewhere.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ClientRequestContext
    let limiter: RateLimiter
    let support: RequestSupport

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var query: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { query[String(name)] = String(value) }
        let path = request.uri.path
        let rules = limiter.rules(method: request.method.rawValue, path: path, query: query)
        guard !rules.isEmpty else { return try await next(request, context) }
        var caller: String?
        if rules.contains(where: { $0.scope == .caller }) {
            caller = (try? await support.principal(request))?.userID
        }
        let keyed = rules.map { rule -> (rule: RateLimitRule, key: String) in
            switch rule.scope {
            case .ip: (rule, "ip:" + context.clientAddress)
            case .caller: (rule, caller.map { "user:" + $0 } ?? "ip:" + context.clientAddress)
            case .project: (rule, "project")
            }
        }
        if let (rule, wait) = limiter.admit(keyed) {
            let seconds = max(1, Int(wait.rounded(.up)))
            var error = path.hasPrefix("/auth/v1/")
                ? APIError.gotrue(.tooManyRequests, "over_request_rate_limit", rule.message ?? "Request rate limit reached")
                : APIError.postgrest(.tooManyRequests, "PT429", rule.message ?? "Too many requests", details: rule.summary,
                                     hint: "Try again in \(seconds) s")
            error.retryAfter = seconds
            throw error
        }
        guard rules.contains(where: { $0.counts == .failures }) else { return try await next(request, context) }
        do {
            let response = try await next(request, context)
            if Self.isFailure(response.status) { limiter.failed(keyed) }
            return response
        } catch let error as any HTTPResponseError {
            if Self.isFailure(error.status) { limiter.failed(keyed) }
            throw error
        }
    }

    static func isFailure(_ status: HTTPResponse.Status) -> Bool {
        (400..<500).contains(status.code) && status.code != 429
    }
}
