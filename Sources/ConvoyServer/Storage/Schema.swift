import Foundation

/// The tables REST serves, described once: identifiers in requests are checked
/// against this, and values converted by column type. Mirrors greenbox-prd.md
/// §3.1 plus what its invite flow (§5.2–5.3) needs.
struct Schema: Sendable {
    enum ColumnType: Sendable, Hashable {
        case uuid, text, bigint, timestamptz
        /// Any other PostgreSQL type, by `format_type` (PostgreSQL store only: it
        /// converts and checks such values itself).
        case other(String)

        /// PostgreSQL's name, for casts and error messages.
        var postgresName: String {
            switch self {
            case .uuid: "uuid"
            case .text: "text"
            case .bigint: "bigint"
            case .timestamptz: "timestamp with time zone"
            case .other(let name): name
            }
        }

        /// The type as `format_type` names it.
        init(postgres name: String) {
            switch name {
            case "uuid": self = .uuid
            case "text": self = .text
            case "bigint": self = .bigint
            case "timestamp with time zone": self = .timestamptz
            default: self = .other(name)
            }
        }
    }

    /// `identity`: the database numbers it; `now`: server-stamped; `value`: a
    /// constant; `database`: some other default the database computes.
    enum Default: Sendable { case identity, now, value(String), database }

    struct Column: Sendable {
        var name: String
        var type: ColumnType
        var nullable = false
        var defaultValue: Default?
    }

    struct Table: Sendable {
        var name: String
        var columns: [Column]
        var primaryKey: String
        /// Columns with a UNIQUE constraint (usable as `on_conflict`).
        var unique: Set<String> = []

        func column(_ name: String) -> Column? { columns.first { $0.name == name } }
    }

    var tables: [String: Table]

    /// A double-quoted SQL identifier.
    static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static let preferences: Set<String> = ["precise", "general"]

    static let greenBox = Schema(tables: [
        "users": Table(name: "users", columns: [
            Column(name: "id", type: .uuid),
            Column(name: "created_at", type: .timestamptz, defaultValue: .now),
            Column(name: "full_name", type: .text, nullable: true),
            Column(name: "avatar_url", type: .text, nullable: true),
            Column(name: "public_key", type: .text),
        ], primaryKey: "id"),
        "friendships": Table(name: "friendships", columns: [
            Column(name: "id", type: .bigint, defaultValue: .identity),
            Column(name: "user_id_1", type: .uuid),
            Column(name: "user_id_2", type: .uuid),
            Column(name: "status", type: .text, defaultValue: .value("pending")),
            Column(name: "requested_by", type: .uuid),
            // What user 1 shares with user 2, and the other way round.
            Column(name: "preference_1", type: .text, nullable: true),
            Column(name: "preference_2", type: .text, nullable: true),
            Column(name: "created_at", type: .timestamptz, defaultValue: .now),
        ], primaryKey: "id"),
        "encrypted_locations": Table(name: "encrypted_locations", columns: [
            Column(name: "id", type: .bigint, defaultValue: .identity),
            Column(name: "sender_id", type: .uuid),
            Column(name: "recipient_id", type: .uuid),
            Column(name: "payload", type: .text),
            Column(name: "created_at", type: .timestamptz, defaultValue: .now),
        ], primaryKey: "id"),
        "invites": Table(name: "invites", columns: [
            Column(name: "code", type: .text),
            Column(name: "inviter_id", type: .uuid),
            Column(name: "preference", type: .text),
            Column(name: "created_at", type: .timestamptz, defaultValue: .now),
            Column(name: "expires_at", type: .timestamptz),
            Column(name: "accepted_by", type: .uuid, nullable: true),
            Column(name: "accepted_at", type: .timestamptz, nullable: true),
        ], primaryKey: "code"),
        "purge_log": Table(name: "purge_log", columns: [
            Column(name: "id", type: .bigint, defaultValue: .identity),
            Column(name: "ran_at", type: .timestamptz),
            Column(name: "deleted", type: .bigint),
            Column(name: "cutoff", type: .timestamptz),
        ], primaryKey: "id"),
    ])
}

extension Optional where Wrapped == Schema.Default {
    /// Set by the server for users, whatever they send (`created_at`).
    var isServerStamped: Bool {
        if case .now? = self { return true }
        return false
    }
}
