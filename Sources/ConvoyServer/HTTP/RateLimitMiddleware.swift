import Foundation
import HTTPTypes
import Hummingbird

/// `RateLimits` in front of the routes: a request over a limit is refused with 429, `Retry-After` (whole
/// seconds) and the body of the service that would answer — GoTrue's `over_request_rate_limit` on
/// `/auth/v1`, PostgREST's shape (code `PT429`, as a function raising SQLSTATE PT429 answers) elsewhere. The service
/// role is never limited.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ClientRequestContext
    let limiter: RateLimiter
    let support: RequestSupport

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The first value of a repeated parameter, as the handlers read it (`?grant_type=password&grant_type=x`
        // is a password sign-in to them, and so to the limits).
        var query: [String: String] = [:]
        for (name, value) in request.uri.queryParameters where query[String(name)] == nil { query[String(name)] = String(value) }
        // The path as the router matches it: empty segments dropped (`//auth/v1/signup/` is `/auth/v1/signup`).
        let path = "/" + request.uri.path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        let rules = limiter.rules(method: request.method.rawValue, path: path, query: query)
        guard !rules.isEmpty else { return try await next(request, context) }
        let principal = try? await support.principal(request)
        // The service role is the project's own tools (an admin script, a seed's set-up): limits stand in front of
        // its users, as GoTrue's admin API and a write made with the service key past an Edge Function's count are.
        if principal?.role == .serviceRole { return try await next(request, context) }
        let caller = principal?.userID
        let keyed = rules.map { rule -> (rule: RateLimitRule, key: String) in
            switch rule.scope {
            case .ip: (rule, "ip:" + context.clientAddress)
            case .caller: (rule, caller.map { "user:" + $0 } ?? "ip:" + context.clientAddress)
            case .project: (rule, "project")
            }
        }
        let (refusal, countedAt) = limiter.admitted(keyed)
        if let (rule, wait) = refusal {
            let seconds = max(1, Int(wait.rounded(.up)))
            var error = path.hasPrefix("/auth/v1/")
                ? APIError.gotrue(.tooManyRequests, "over_request_rate_limit", rule.message ?? "Request rate limit reached")
                : APIError.postgrest(.tooManyRequests, "PT429", rule.message ?? "Too many requests", details: rule.summary,
                                     hint: "Try again in \(seconds) s")
            error.retryAfter = seconds
            throw error
        }
        guard rules.contains(where: { $0.counts == .failures }) else { return try await next(request, context) }
        // Counted already (so concurrent attempts cannot all get in); taken back unless it failed.
        do {
            let response = try await next(request, context)
            if !Self.isFailure(response.status) { limiter.succeeded(keyed, at: countedAt) }
            return response
        } catch let error as any HTTPResponseError {
            if !Self.isFailure(error.status) { limiter.succeeded(keyed, at: countedAt) }
            throw error
        } catch {
            limiter.succeeded(keyed, at: countedAt)
            throw error
        }
    }

    static func isFailure(_ status: HTTPResponse.Status) -> Bool {
        (400..<500).contains(status.code) && status.code != 429
    }
}
