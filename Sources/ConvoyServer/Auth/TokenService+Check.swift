import ConvoyTime

/// The server's token check, reachable from the fuzz target (ConvoyFuzz): one `TokenService` with a fixed secret.
package actor TokenCheck {
    private let service: TokenService

    package init(secret: String) async {
        service = await TokenService(secret: secret, clock: SystemClock(), issuer: "convoy/auth/v1", ttl: 3_600)
    }

    /// The role of a token whose signature and expiry verify; nil for anything else.
    package func verifiedRole(_ token: String) async -> String? {
        try? await service.verify(token).role
    }

}
