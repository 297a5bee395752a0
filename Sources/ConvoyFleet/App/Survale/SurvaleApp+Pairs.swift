import ConvoyCrypto
import ConvoySodium
import ConvoyWire

/// Survale's accounts after sign-up: the agency provisions each user in `formGroup`, and its positions travel in the
/// clear (no keys to publish, none to wait for). Its friends are its team (`GroupApp`), never pairs.
extension SurvaleApp {
    /// Nothing to publish.
    public func finishSignUp(keys: BoxKeyPair, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {}

    /// Nothing to wait for: no key is published.
    public func hasPublishedKey(_ userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool { true }
}
