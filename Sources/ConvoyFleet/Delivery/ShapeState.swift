/// What a phone keeps of its app's delivery shape: exactly one shape's state, chosen when the phone is made
/// from its app's shape (`DeliveryShape`). The core phone (`Device/`) never reads it; each shape's room reaches its
/// own state through `pairwise`, `group` or `mailbox` below, which trap if the phone is of another shape (a room's
/// code called on a phone that is not of it: a bug, not a state to handle).
///
/// A state is taken out of the enum while it is changed (`modifying`), so that a change made in place never copies it.
enum ShapeState: Sendable {
    case pairwise(PairwiseState)
    case group(GroupState)
    case mailbox(MailboxState)
    /// Only while a room's accessor yields its state to be changed.
    case modifying

    /// A new phone's state for `app`'s shape; `role` is its place in its group (group apps).
    init(for app: any AppProfile, role: GroupRole?, chatRetry: ChatRetryQueue<ChatPost>.Policy, seed: UInt64) {
        switch app.shape {
        case .pairwise: self = .pairwise(PairwiseState())
        case .group: self = .group(GroupState(role: role, chatRetry: chatRetry, seed: seed))
        case .mailbox: self = .mailbox(MailboxState())
        }
    }

    var kind: DeliveryShape {
        switch self {
        case .pairwise: .pairwise
        case .group: .group
        case .mailbox: .mailbox
        case .modifying: preconditionFailure("a shape's state read while it is being changed")
        }
    }
}

extension VirtualDevice {
    /// A pairwise phone's state (`Delivery/Pairwise/`).
    var pairwise: PairwiseState {
        get {
            guard case .pairwise(let s) = shape else { preconditionFailure("pairwise state read on a \(shape.kind) phone") }
            return s
        }
        _modify {
            guard case .pairwise(var s) = shape else { preconditionFailure("pairwise state changed on a \(shape.kind) phone") }
            shape = .modifying
            defer { shape = .pairwise(s) }
            yield &s
        }
    }

    /// A group phone's state (`Delivery/Group/`).
    var group: GroupState {
        get {
            guard case .group(let s) = shape else { preconditionFailure("group state read on a \(shape.kind) phone") }
            return s
        }
        _modify {
            guard case .group(var s) = shape else { preconditionFailure("group state changed on a \(shape.kind) phone") }
            shape = .modifying
            defer { shape = .group(s) }
            yield &s
        }
    }

    /// A mailbox phone's state (`Delivery/Mailbox/`).
    var mailbox: MailboxState {
        get {
            guard case .mailbox(let s) = shape else { preconditionFailure("mailbox state read on a \(shape.kind) phone") }
            return s
        }
        _modify {
            guard case .mailbox(var s) = shape else { preconditionFailure("mailbox state changed on a \(shape.kind) phone") }
            shape = .modifying
            defer { shape = .mailbox(s) }
            yield &s
        }
    }
}
