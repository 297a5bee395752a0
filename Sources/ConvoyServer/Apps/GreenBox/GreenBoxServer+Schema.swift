/// Green Box's tables as the SQLite store serves them: greenbox-prd.md §3.1
/// plus what its invite flow (§5.2–5.3) needs. Identifiers in requests are
/// checked against this, and values converted by column type.
extension GreenBoxServer {
    /// What a friend sees of one's location: the exact fix, or a coarse one.
    static let preferences: Set<String> = ["precise", "general"]

    static let schema = Schema(tables: [
        "users": Schema.Table(name: "users", columns: [
            Schema.Column(name: "id", type: .uuid),
            Schema.Column(name: "created_at", type: .timestamptz, defaultValue: .now),
            Schema.Column(name: "full_name", type: .text, nullable: true),
            Schema.Column(name: "avatar_url", type: .text, nullable: true),
            Schema.Column(name: "public_key", type: .text),
        ], primaryKey: "id"),
        "friendships": Schema.Table(name: "friendships", columns: [
            Schema.Column(name: "id", type: .bigint, defaultValue: .identity),
            Schema.Column(name: "user_id_1", type: .uuid),
            Schema.Column(name: "user_id_2", type: .uuid),
            Schema.Column(name: "status", type: .text, defaultValue: .value("pending")),
            Schema.Column(name: "requested_by", type: .uuid),
            // What user 1 shares with user 2, and the other way round.
            Schema.Column(name: "preference_1", type: .text, nullable: true),
            Schema.Column(name: "preference_2", type: .text, nullable: true),
            Schema.Column(name: "created_at", type: .timestamptz, defaultValue: .now),
        ], primaryKey: "id"),
        "encrypted_locations": Schema.Table(name: "encrypted_locations", columns: [
            Schema.Column(name: "id", type: .bigint, defaultValue: .identity),
            Schema.Column(name: "sender_id", type: .uuid),
            Schema.Column(name: "recipient_id", type: .uuid),
            Schema.Column(name: "payload", type: .text),
            Schema.Column(name: "created_at", type: .timestamptz, defaultValue: .now),
        ], primaryKey: "id"),
        "invites": Schema.Table(name: "invites", columns: [
            Schema.Column(name: "code", type: .text),
            Schema.Column(name: "inviter_id", type: .uuid),
            Schema.Column(name: "preference", type: .text),
            Schema.Column(name: "created_at", type: .timestamptz, defaultValue: .now),
            Schema.Column(name: "expires_at", type: .timestamptz),
            Schema.Column(name: "accepted_by", type: .uuid, nullable: true),
            Schema.Column(name: "accepted_at", type: .timestamptz, nullable: true),
        ], primaryKey: "code"),
        "purge_log": Schema.Table(name: "purge_log", columns: [
            Schema.Column(name: "id", type: .bigint, defaultValue: .identity),
            Schema.Column(name: "ran_at", type: .timestamptz),
            Schema.Column(name: "deleted", type: .bigint),
            Schema.Column(name: "cutoff", type: .timestamptz),
        ], primaryKey: "id"),
    ])
}
