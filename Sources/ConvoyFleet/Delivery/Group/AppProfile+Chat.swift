import ConvoyWire

/// A group app's chat as a phone loads it after a gap (Survale: the
/// operation's `op_messages`): what was posted while the phone was off its
/// network, which Realtime never delivered to it.
public struct MissedMessages: Sendable {
    /// The lines of the page, oldest first, each with its sender's user id.
    public var lines: [(sender: String, message: GroupMessage)]
    /// Rows in the page the phone could not read (a body it does not know): skipped, counted.
    public var malformed: Int
    /// The response's size, bytes.
    public var bytes: Int
    /// Where the next page starts (the backend's id of the page's last row).
    public var cursor: Int64

    public init(lines: [(sender: String, message: GroupMessage)], malformed: Int = 0, bytes: Int, cursor: Int64) {
        (self.lines, self.malformed, self.bytes, self.cursor) = (lines, malformed, bytes, cursor)
    }

    /// How many rows the page held (read or not): a page shorter than asked is the last.
    public var rows: Int { lines.count + malformed }
}
