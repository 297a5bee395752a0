import ConvoySodium
import Foundation

/// The project's API keys, as Supabase issues them: JWTs signed with the JWT
/// secret whose `role` is `anon` or `service_role`.
public struct ServerKeys: Sendable, Codable {
    public var url: String
    public var anonKey: String
    public var serviceRoleKey: String

    enum CodingKeys: String, CodingKey {
        case url
        case anonKey = "anon_key"
        case serviceRoleKey = "service_role_key"
    }

    /// Writes `{"url","anon_key","service_role_key"}` readable by the owner only (0600).
    public func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(self)
        // Written beside it (0600 from the start) and renamed into place: a process waiting for the file (a CI job, a
        // test) sees it whole or not at all, never created and still empty.
        let fm = FileManager.default
        let partial = path + ".partial-\(getpid())"
        try? fm.removeItem(atPath: partial)
        guard fm.createFile(atPath: partial, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
        }
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: partial))
            defer { try? handle.close() }
            try handle.write(contentsOf: data + Data("\n".utf8))
            try handle.synchronize()
        } catch {
            try? fm.removeItem(atPath: partial)
            throw error
        }
        guard rename(partial, path) == 0 else {
            let code = errno
            try? fm.removeItem(atPath: partial)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)])
        }
    }

    public static func read(from path: String) throws -> ServerKeys {
        try JSONDecoder().decode(ServerKeys.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// A random 40-byte secret, Base64: what `convoy serve` uses without `--jwt-secret`.
    static func randomSecret() -> String {
        Data(Sodium.randomBytes(40)).base64EncodedString()
    }
}
