import ConvoyWire

/// Pairing during the run, for apps that have less of it than the protocol names.
extension AppProfile {
    /// No lookup: the app asks by the friend's id (or hands a code over).
    public func lookUpFriend(_ invitee: Invitee, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool { false }

    /// No "no": the request stays pending (Green Box's "Decline/Decide Later", PRD §5.3; a Closer code nobody types in).
    public func declineFriendship(_ id: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {}
}
