/// How an update reaches a friend: one of three shapes, each a room of its own under `Delivery/`
/// (its phone state, receive path, catch-up, accounting and retention check). An app has one
/// (`AppProfile.shape`, from the shape protocol it conforms to); only `Delivery/` and `App/` read it (`scripts/check-imports` refuses the rest).
public enum DeliveryShape: String, Sendable, Equatable, CaseIterable {
    /// Sealed to each friend, inserted as rows, pushed over `postgres_changes` (Green Box).
    case pairwise
    /// One broadcast to the phone's group on a private channel, with presence (Survale).
    case group
    /// Stored by the backend in the recipient's mailbox until the phone, polling, fetches and
    /// acknowledges it; no Realtime (QuickPic's `GET /messages` then `POST /messages/:id/ack`, Closer).
    case mailbox

    /// A phone of this shape connects to Realtime.
    public var usesRealtime: Bool { self != .mailbox }
}
