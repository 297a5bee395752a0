import ConvoyJSON
import Hummingbird

/// `/auth/v1`: GoTrue's routes that Supabase clients call.
struct AuthRoutes: Sendable {
    let auth: AuthService
    let support: RequestSupport

    func add(to router: Router<ClientRequestContext>) {
        let group = router.group("auth/v1")
        group.post("signup") { request, _ in
            let body = try await support.json(request, gotrue: true)
            guard case .object = body else {
                throw APIError.gotrue(.badRequest, "bad_json", "The request body must be a JSON object")
            }
            for key in ["email", "password"] where body[key] != nil && body[key]?.string == nil {
                throw APIError.gotrue(.badRequest, "validation_failed", "\(key) must be a string")
            }
            let session = try await auth.signUp(email: body["email"]?.string, password: body["password"]?.string)
            return JSONResponse.make(.ok, session)
        }
        group.post("token") { request, _ in
            let grant = request.uri.queryParameters["grant_type"].map(String.init)
            let body = try await support.json(request, gotrue: true)
            switch grant {
            case "password":
                guard let email = body["email"]?.string, let password = body["password"]?.string else {
                    throw APIError.gotrue(.badRequest, "validation_failed", "email and password are required")
                }
                return JSONResponse.make(.ok, try await auth.signIn(email: email, password: password))
            case "refresh_token":
                guard let token = body["refresh_token"]?.string else {
                    throw APIError.gotrue(.badRequest, "validation_failed", "refresh_token is required")
                }
                return JSONResponse.make(.ok, try await auth.refresh(token: token))
            default:
                throw APIError.gotrue(.badRequest, "unsupported_grant_type", "grant_type must be password or refresh_token")
            }
        }
        group.post("logout") { request, _ in
            let who = try await support.principal(request, gotrue: true)
            try await auth.logout(who, scope: request.uri.queryParameters["scope"].map(String.init))
            return JSONResponse.empty(.noContent)
        }
        group.get("user") { request, _ in
            let who = try await support.principal(request, gotrue: true)
            guard who.role == .authenticated, let id = who.userID else {
                throw APIError.gotrue(.unauthorized, "no_authorization", "This endpoint requires a Bearer token")
            }
            if let sid = who.sessionID, try await !auth.sessionIsLive(sid) {
                throw APIError.gotrue(.forbidden, "session_not_found", "Session from session_id claim in JWT does not exist")
            }
            return JSONResponse.make(.ok, try await auth.user(id: id))
        }
        group.post("admin/users") { request, _ in
            guard try await support.principal(request, gotrue: true).role == .serviceRole else {
                throw APIError.gotrue(.forbidden, "not_admin", "User not allowed")
            }
            let body = try await support.json(request, gotrue: true)
            return JSONResponse.make(.ok, try await auth.adminCreate(email: body["email"]?.string, password: body["password"]?.string))
        }
    }
}
