import ConvoySodium
import ConvoyWire
import Foundation

/// `roster.json` (`convoy run --keep-roster`, written 0600): every device's
/// account and key pair, so a run can be repeated against the same project
/// and a third party can decrypt what was sent. Secrets, all of it.
public enum Roster {
    public static let schema = "convoy.roster"
    public static let version = 1

    public static func json(_ accounts: [DeviceAccount], target url: String) throws -> Data {
        let devices = accounts.map { a in
            Device(index: a.index, user_id: a.userID, email: a.email, password: a.password, refresh_token: a.session.refreshToken,
                   public_key: a.keys.publicKey.base64, secret_key: a.keys.secretKey.exportBase64(),
                   previous_keys: a.previousKeys.map { KeyPair(public_key: $0.publicKey.base64, secret_key: $0.secretKey.exportBase64()) })
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(File(schema: schema, version: version, url: url, devices: devices))
    }

    /// The file's shape, its keys as written.
    struct File: Encodable {
        var schema: String
        var version: Int
        var url: String
        var devices: [Device]
    }

    struct Device: Encodable {
        var index: Int
        var user_id: String
        var email: String
        var password: String
        var refresh_token: String
        var public_key: String
        var secret_key: String
        var previous_keys: [KeyPair]
    }

    struct KeyPair: Encodable {
        var public_key: String
        var secret_key: String
    }
}
