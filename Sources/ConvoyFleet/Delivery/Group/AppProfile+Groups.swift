import ConvoyCrypto
import ConvoyMetrics
import ConvoyWire

/// A group's after-action replay as one reader loaded it: its archived positions (by member), the chat lines, how
/// many of the positions carried a heading, the requests and bytes it took.
public struct ReplayLoad: Sendable, Equatable {
    public var positions = 0
    public var positionsByMember: [String: Int] = [:]
    public var withHeading = 0
    public var messages = 0
    public var requests = 0
    public var bytes = 0

    public init() {}
}


/// What a group leaves behind, by kind, for the retention check.
public enum GroupItem: String, Sendable, CaseIterable, Comparable {
    /// Its messages (Survale: `op_messages`).
    case messages
    /// Positions kept for replay (Survale: `locations_archive`).
    case archive
    /// Photos and videos (Survale: objects in `op-media`).
    case media

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// What of an ended group one reader can still read (`GroupApp.groupRemains`).
public struct GroupRemains: Sendable, Equatable {
    /// When the group ended, Unix seconds, and as the backend wrote it; nil while it goes on, or once the
    /// reader cannot see it any more (purged).
    public var endedAt: Double?
    public var endedText: String?
    /// The backend ended it (Survale: auto-end), not its owner.
    public var byBackend = false
    /// Items readable, by kind.
    public var readable: [GroupItem: Int]
    /// Of them the reader's own, where the app can tell (a kind missing here: only `readable` is known).
    public var own: [GroupItem: Int]

    public init(endedAt: Double? = nil, endedText: String? = nil, byBackend: Bool = false, readable: [GroupItem: Int] = [:],
                own: [GroupItem: Int] = [:]) {
        (self.endedAt, self.endedText, self.byBackend, self.readable, self.own) = (endedAt, endedText, byBackend, readable, own)
    }
}

/// A message a phone posts to its group: Convoy's sequence number and intended send time, its text, and the
/// photo or video it carries (uploaded first).
public struct GroupMessage: Sendable, Equatable {
    public var seq: UInt64
    /// Intended send time, Unix nanoseconds.
    public var sentNanos: Int64
    public var text: String
    public var media: MediaRef?

    public init(seq: UInt64, sentNanos: Int64, text: String, media: MediaRef? = nil) {
        (self.seq, self.sentNanos, self.text, self.media) = (seq, sentNanos, text, media)
    }
}

/// Uploaded media as a chat line names it: what it is, its size, and where the app stored it (opaque to the phone).
public struct MediaRef: Sendable, Equatable {
    public var kind: MediaKind
    public var bytes: Int
    public var location: String

    public init(kind: MediaKind, bytes: Int, location: String) { (self.kind, self.bytes, self.location) = (kind, bytes, location) }
}

/// How a group ended, as its backend recorded it.
public struct GroupEnd: Sendable, Equatable {
    public var ended: Bool
    /// The backend ended it (Survale: `end_reason = auto_end`), not its owner.
    public var byBackend: Bool
    /// When, Unix seconds.
    public var endedAt: Double?

    public init(ended: Bool, byBackend: Bool, endedAt: Double?) { (self.ended, self.byBackend, self.endedAt) = (ended, byBackend, endedAt) }
}
