import Foundation
import GRDB

/// Survale's chat media on the SQLite store, mirroring
/// `SurvaleSQL/003_survale_media.sql`: the private bucket `op-media`, objects
/// named `<operation id>/<file>`, read by the operation's members (also after
/// its end) and uploaded by a current member of an active operation; deleted
/// by the purge alone.
extension SurvaleServer {
    static let mediaBucketID = "op-media"

    /// The bucket: private, 50 MiB an object, images and videos.
    static let mediaBucket = """
        INSERT OR IGNORE INTO storage_buckets (id, name, public, file_size_limit, allowed_mime_types, created_at, updated_at)
          VALUES ('op-media', 'op-media', 0, 52428800, '["image/*","video/*"]', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                  strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
        """

    /// `operation_of_object(name)`: its first folder, when that is an operation id.
    static func operation(ofObject name: String) -> String? {
        guard let folder = name.split(separator: "/", omittingEmptySubsequences: false).dropLast().first.map(String.init),
              folder.count == 36, folder == folder.lowercased(), UUID(uuidString: folder) != nil
        else { return nil }
        return folder
    }

    /// survale_media_select: `bucket_id = 'op-media' AND is_operation_member(operation_of_object(name))`;
    /// survale_media_insert: `… AND is_current_member(operation_of_object(name), ARRAY['active'])`.
    var storagePolicy: StoragePolicy {
        StoragePolicy { action, object, who, db in
            guard object.bucketID == Self.mediaBucketID, who.role == .authenticated, let uid = who.userID else { return false }
            let op = Self.operation(ofObject: object.name)
            switch action {
            case .select: return try Self.isMember(op, uid, db)
            case .insert: return try Self.isCurrentMember(op, uid, statuses: ["active"], db)
            case .update, .delete: return false
            }
        }
    }
}
