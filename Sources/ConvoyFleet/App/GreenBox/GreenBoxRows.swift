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

    /// A friendship as the PRD's pairing reads it (§3.1, §5.2–5.3).
    struct FriendshipRow: Decodable, Sendable {
        var id: Int64
        var userID1: String
        var userID2: String
        var status: String
        var requestedBy: String

        enum CodingKeys: String, CodingKey {
            case id, status
            case userID1 = "user_id_1"
            case userID2 = "user_id_2"
            case requestedBy = "requested_by"
        }
    }

    /// The inviter's pending friendship (PRD §5.2), in the PRD's columns only: the sharing preference
    /// stays on the phone (§4.4 step 2b, "a user-defined fuzzy setting for this friend").
    struct FriendshipRequest: Encodable, Sendable {
        var userID1: String
        var userID2: String
        var status = "pending"
        var requestedBy: String

        enum CodingKeys: String, CodingKey {
            case status
            case userID1 = "user_id_1"
            case userID2 = "user_id_2"
            case requestedBy = "requested_by"
        }
    }

    /// The invitee's acceptance (PRD §5.3 step 5): active; its preference, too, stays on its phone.
    struct FriendshipAcceptance: Encodable, Sendable {
        var status = "active"
    }

    /// A user's row as the PRD's pairing mode publishes it: `created_at` is "not null" in §3.1 with no
    /// default, so a client built to the PRD sends it (a server that stamps its own time overrides it).
    struct UserWithCreation: Encodable, Sendable {
        var id: String
        var publicKey: String
        var createdAt: String

        enum CodingKeys: String, CodingKey {
            case id
            case publicKey = "public_key"
            case createdAt = "created_at"
        }
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
