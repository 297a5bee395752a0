import Foundation

/// The tables REST serves, described once: identifiers in requests are checked
/// against this, and values converted by column type. The SQLite store serves
/// its app's (`ServerApp.schema`); the PostgreSQL store reads the database's.
struct Schema: Sendable {
    enum ColumnType: Sendable, Hashable {
        case uuid, text, bigint, timestamptz
        /// `double precision` (coordinates).
        case double
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
            case .double: "double precision"
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
            case "double precision": self = .double
            default: self = .other(name)
            }
        }
    }

    /// `identity`: the database numbers it; `now`: server-stamped; `value`: a
    /// constant; `uuid`: a random UUID (`gen_random_uuid()`); `database`: some
    /// other default the database computes.
    enum Default: Sendable { case identity, now, value(String), uuid, database }

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
        // Names seldom hold a quote: Foundation's replacing (through NSString) only for those that do.
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

extension Optional where Wrapped == Schema.Default {
    /// Set by the server for users, whatever they send (`created_at`).
    var isServerStamped: Bool {
        if case .now? = self { return true }
        return false
    }
}
