import Hummingbird

/// Supabase's gateway rule: every request names the project's `apikey`
/// (header or query parameter), and it must be one of the project's keys.
struct APIKeyMiddleware<Context: RequestContext>: RouterMiddleware {
    let support: RequestSupport

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if ObjectStorageRoutes.isOpen(request) { return try await next(request, context) }  // signed and public Storage URLs
        guard let key = support.apikey(request) else {
            throw APIError.gateway(.unauthorized, "No API key found in request")
        }
        guard let claims = try? await support.tokens.verify(key), claims.role == "anon" || claims.role == "service_role" else {
            throw APIError.gateway(.unauthorized, "Invalid API key")
        }
        return try await next(request, context)
    }
}
