import ConvoySodium
import ConvoyWire

/// Accounts as a Supabase app makes them: GoTrue's sign-up (or the admin API, for projects that confirm
/// emails, then a password sign-in), then the app's own `finishSignUp` (Green Box: its key published); GoTrue's refresh, sign-in and logout.
/// An app with an auth of its own (QuickPic's `/auth/register`) implements these instead.
extension AppProfile {
    public func signUp(email: String, password: String, keys: BoxKeyPair, adminKey: String?,
                       via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        let auth = SupabaseAuth(http)
        let session: Session
        if let adminKey {
            try await auth.adminCreateUser(email: email, password: password, serviceKey: adminKey)
            session = try await auth.signIn(email: email, password: password)
        } else {
            session = try await auth.signUp(email: email, password: password)
        }
        try await finishSignUp(keys: keys, session: session, via: http)
        return session
    }

    public func signIn(email: String, password: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        try await SupabaseAuth(http).signIn(email: email, password: password)
    }

    public func refresh(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Session {
        try await SupabaseAuth(http).refresh(session.refreshToken)
    }

    public func signOut(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        try await SupabaseAuth(http).signOut(session.accessToken)
    }
}
