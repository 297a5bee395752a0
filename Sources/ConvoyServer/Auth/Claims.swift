import Foundation
import JWTKit

/// The claims of every JWT the server issues or accepts, as GoTrue writes them
/// (DESIGN.md): access tokens carry a user; API keys carry only a role.
struct Claims: JWTPayload, Equatable {
    var iss: String?
    var sub: String?
    var aud: String?
    var exp: Int?
    var iat: Int?
    var email: String?
    var role: String
    var session_id: String?
    var is_anonymous: Bool?

    /// Expiry is checked against the server's injected clock, not here.
    func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// Who a request acts as, after its `apikey` and `Authorization` are checked.
struct Principal: Sendable, Equatable {
    enum Role: String, Sendable { case anon, authenticated, serviceRole = "service_role" }

    var role: Role
    /// The user id (`auth.uid()`), for `authenticated`.
    var userID: String?
    var sessionID: String?
    var email: String?

    static let anonymous = Principal(role: .anon)
    static let service = Principal(role: .serviceRole)
}

extension Principal {
    /// Who a verified token speaks for; nil for an unknown role or a user
    /// token without a UUID subject.
    init?(claims: Claims) {
        switch claims.role {
        case "anon": self = .anonymous
        case "service_role": self = .service
        case "authenticated":
            guard let sub = claims.sub, UUID(uuidString: sub) != nil else { return nil }
            self.init(role: .authenticated, userID: sub.lowercased(), sessionID: claims.session_id, email: claims.email)
        default: return nil
        }
    }
}
