import Foundation

/// QuickPic's JSON (docs/quickpic-api.md), as its client reads and writes it. Binary fields are base64 text
/// here: the phone's app decodes them (the client carries blobs, it opens nothing).
public enum QuickPic {
    /// A user as the server shows one (`GET /users/:username`, a session's `user`).
    public struct User: Codable, Sendable, Equatable {
        public var id: String
        public var username: String
        public var publicKey: String
        public var signingKey: String
        public var createdAt: String?

        public init(id: String, username: String, publicKey: String, signingKey: String, createdAt: String? = nil) {
            (self.id, self.username, self.publicKey, self.signingKey, self.createdAt) = (id, username, publicKey, signingKey, createdAt)
        }

        enum CodingKeys: String, CodingKey {
            case id, username
            case publicKey = "public_key"
            case signingKey = "signing_key"
            case createdAt = "created_at"
        }
    }

    /// What register, login and refresh return.
    public struct SessionBody: Codable, Sendable {
        public var accessToken: String
        public var tokenType: String?
        public var expiresIn: Double
        public var expiresAt: Double?
        public var refreshToken: String
        public var user: User

        public init(accessToken: String, tokenType: String?, expiresIn: Double, expiresAt: Double?, refreshToken: String, user: User) {
            (self.accessToken, self.tokenType, self.expiresIn, self.expiresAt) = (accessToken, tokenType, expiresIn, expiresAt)
            (self.refreshToken, self.user) = (refreshToken, user)
        }

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresIn = "expires_in"
            case expiresAt = "expires_at"
            case refreshToken = "refresh_token"
            case user
        }
    }

    public struct Register: Codable, Sendable {
        public var username: String
        public var password: String
        public var publicKey: String
        public var signingKey: String

        public init(username: String, password: String, publicKey: String, signingKey: String) {
            (self.username, self.password, self.publicKey, self.signingKey) = (username, password, publicKey, signingKey)
        }

        enum CodingKeys: String, CodingKey {
            case username, password
            case publicKey = "public_key"
            case signingKey = "signing_key"
        }
    }

    /// A friend request (`POST /friends/request`, `GET /friends/requests`).
    public struct Request: Codable, Sendable, Equatable {
        public var id: String
        public var fromUserID: String
        public var fromUsername: String?
        public var toUserID: String
        public var status: String
        public var createdAt: String?

        public init(id: String, fromUserID: String, fromUsername: String?, toUserID: String, status: String, createdAt: String?) {
            (self.id, self.fromUserID, self.fromUsername, self.toUserID, self.status, self.createdAt) =
                (id, fromUserID, fromUsername, toUserID, status, createdAt)
        }

        enum CodingKeys: String, CodingKey {
            case id, status
            case fromUserID = "from_user_id"
            case fromUsername = "from_username"
            case toUserID = "to_user_id"
            case createdAt = "created_at"
        }
    }

    /// A friend as `GET /friends` lists one: the friend's user id and keys.
    public struct Friend: Codable, Sendable, Equatable {
        public var id: String
        public var username: String
        public var publicKey: String
        public var signingKey: String
        public var since: String?

        public init(id: String, username: String, publicKey: String, signingKey: String, since: String?) {
            (self.id, self.username, self.publicKey, self.signingKey, self.since) = (id, username, publicKey, signingKey, since)
        }

        enum CodingKeys: String, CodingKey {
            case id, username, since
            case publicKey = "public_key"
            case signingKey = "signing_key"
        }
    }

    /// A message to send: the fields of `QuickPicMessage` (base64) and its recipient.
    public struct Outgoing: Codable, Sendable {
        public var toUserID: String
        public var encryptedContent: String
        public var contentType: String
        public var signature: String
        /// Not sent by an honest client (the server takes the sender from the token); a probe spoofing one sets it.
        public var fromUserID: String?

        public init(toUserID: String, encryptedContent: String, contentType: String, signature: String, fromUserID: String? = nil) {
            (self.toUserID, self.encryptedContent, self.contentType, self.signature) = (toUserID, encryptedContent, contentType, signature)
            self.fromUserID = fromUserID
        }

        enum CodingKeys: String, CodingKey {
            case fromUserID = "from_user_id"
            case toUserID = "to_user_id"
            case encryptedContent = "encrypted_content"
            case contentType = "content_type"
            case signature
        }
    }

    /// A pending message as `GET /messages` lists it.
    public struct Message: Codable, Sendable, Equatable {
        public var id: String
        public var fromUserID: String
        public var toUserID: String
        public var encryptedContent: String
        public var contentType: String
        public var signature: String
        public var createdAt: String

        public init(id: String, fromUserID: String, toUserID: String, encryptedContent: String, contentType: String, signature: String,
                    createdAt: String) {
            (self.id, self.fromUserID, self.toUserID, self.encryptedContent) = (id, fromUserID, toUserID, encryptedContent)
            (self.contentType, self.signature, self.createdAt) = (contentType, signature, createdAt)
        }

        enum CodingKeys: String, CodingKey {
            case id, signature
            case fromUserID = "from_user_id"
            case toUserID = "to_user_id"
            case encryptedContent = "encrypted_content"
            case contentType = "content_type"
            case createdAt = "created_at"
        }
    }

    /// What `POST /messages` answers.
    public struct Stored: Codable, Sendable, Equatable {
        public var id: String
        public var createdAt: String

        public init(id: String, createdAt: String) { (self.id, self.createdAt) = (id, createdAt) }

        enum CodingKeys: String, CodingKey {
            case id
            case createdAt = "created_at"
        }
    }

    /// The server's error body.
    public struct ErrorBody: Codable, Sendable {
        public var error: String
        public var message: String?

        public init(error: String, message: String? = nil) { (self.error, self.message) = (error, message) }
    }

    /// RFC 3339 (with or without fractional seconds) → Unix seconds; nil when it is not one.
    public static func unixSeconds(_ text: String) -> Double? {
        let full = ISO8601DateFormatter()
        full.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = full.date(from: text) {
            // ISO8601DateFormatter keeps milliseconds; the microseconds are read apart.
            return d.timeIntervalSince1970.rounded(.down) + fraction(of: text)
        }
        let plain = ISO8601DateFormatter()
        return plain.date(from: text)?.timeIntervalSince1970
    }

    private static func fraction(of text: String) -> Double {
        guard let dot = text.firstIndex(of: ".") else { return 0 }
        let digits = text[text.index(after: dot)...].prefix { $0.isNumber }
        return Double("0." + digits) ?? 0
    }
}
