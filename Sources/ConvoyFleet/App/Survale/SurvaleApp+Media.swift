import ConvoyMetrics
import ConvoyWire
import Foundation

/// Survale's chat media (survale-spec §6, §10: photos and short videos
/// "uploaded to Supabase Storage with signed URLs"): the sender asks for a
/// signed upload URL for `<operation id>/<file>` in the private bucket
/// `op-media` (RLS: a current member of an active operation), uploads the
/// bytes to it, and posts the chat line naming the object in
/// `op_messages.media_path`; a member who hears the line asks for a signed
/// download URL (RLS: a member) and downloads it.
extension SurvaleApp {
    static let mediaBucket = "op-media"
    /// How long a download URL lasts: a member fetches at once.
    static let downloadURLLifetime = 300

    public var sendsMedia: Bool { true }

    /// `<operation id>/<sender>-<seq>-<nonce>.jpg|mp4`: a new name for each attempt (an upload whose answer was
    /// lost may have stored its object; the bucket's policy lets nobody replace one).
    public func uploadMedia(_ kind: MediaKind, bytes: [UInt8], seq: UInt64, from session: Session, via http: SupabaseHTTP,
                            progress: (@Sendable (HTTPProgress) -> Void)?) async throws(SupabaseError) -> MediaRef {
        guard let operation = operation(of: session.userID) else { throw SupabaseError(kind: .notJoined, message: "no operation") }
        let file = "\(session.userID.prefix(8))-\(seq)-\(UInt32.random(in: 0...UInt32.max)).\(kind == .photo ? "jpg" : "mp4")"
        let storage = SupabaseStorage(http)
        let signed = try await storage.createSignedUploadURL(bucket: Self.mediaBucket, path: "\(operation)/\(file)", token: session.accessToken)
        let upload = try await storage.upload(to: signed, bytes: bytes, contentType: kind.contentType, progress: progress)
        return MediaRef(kind: kind, bytes: upload.bytes, location: "\(operation)/\(file)")
    }

    public func fetchMedia(_ media: MediaRef, as session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        let storage = SupabaseStorage(http)
        let url = try await storage.createSignedURL(bucket: Self.mediaBucket, path: media.location, expiresIn: Self.downloadURLLifetime,
                                                    token: session.accessToken)
        return try await storage.download(signedURL: url).body.count
    }

    /// The media a chat line names: its object (`media_path`) with the kind and size the line gives.
    static func media(of line: ChatLine, path: String?) -> MediaRef? {
        guard let path, !path.isEmpty, path != "null", let kind = line.kind.flatMap(MediaKind.init(rawValue:)), let bytes = line.bytes else { return nil }
        return MediaRef(kind: kind, bytes: bytes, location: path)
    }
}
