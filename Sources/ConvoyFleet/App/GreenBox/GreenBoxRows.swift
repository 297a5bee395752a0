/// Green Box's rows as its REST API reads and writes them (greenbox-prd.md §3.1,
/// §5): the only place their column names are spelt.
enum GreenBoxRows {
    /// `encrypted_locations`: one sealed update for one recipient.
    struct Location: Codable, Sendable {
        var id: Int64?
        var senderID: String
        var recipientID: String?
        var payload: String
        var createdAt: String?

        enum CodingKeys: String, CodingKey {
            case id, payload
            case senderID = "sender_id"
            case recipientID = "recipient_id"
            case createdAt = "created_at"
        }

        /// One row of a bulk insert as JSON, written by hand on the sending hot
        /// path (one per friend per tick): uuids and Base64 need no escaping.
        static func insertJSON(sender: String, recipient: String, payload: String) -> String {
            "{\"sender_id\":\"\(sender)\",\"recipient_id\":\"\(recipient)\",\"payload\":\"\(payload)\"}"
        }
    }

    /// A stored row's id and creation time (the retention checker's view).
    struct Stored: Decodable, Sendable {
        var id: Int64
        var createdAt: String?

        enum CodingKeys: String, CodingKey {
            case id
            case createdAt = "created_at"
        }
    }

    /// `users`: a user's published key.
    struct User: Codable, Sendable {
        var id: String
        var publicKey: String?

        enum CodingKeys: String, CodingKey {
            case id
            case publicKey = "public_key"
        }
    }

    /// `friendships`, as far as a device reads it.
    struct Friendship: Decodable, Sendable {
        var status: String
    }

    /// `create_invite`'s arguments and result, and `accept_invite`'s arguments.
    struct InviteArguments: Encodable, Sendable {
        var preference: String
    }

    struct Invite: Decodable, Sendable {
        var code: String
    }

    struct AcceptArguments: Encodable, Sendable {
        var code: String
        var preference: String
    }

    /// The names of the tables, the topic prefix and the RPCs.
    static let locations = "encrypted_locations"
    static let users = "users"
    static let friendships = "friendships"
    static let createInvite = "create_invite"
    static let acceptInvite = "accept_invite"
    static func topic(_ userID: String) -> String { "realtime:greenbox:\(userID)" }
}
