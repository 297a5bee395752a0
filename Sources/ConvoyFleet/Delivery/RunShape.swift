import ConvoyMetrics

/// The run's delivery shape, held once by its `FleetContext`: its app as that shape, and the ledgers the shape keeps for
/// the whole run (a group app's presence, chat, media, direct messages and replays; a mailbox app's messages). A pairwise
/// app keeps none beyond the phones' own. Each room reaches its own through the accessors below, which trap on a run of
/// another shape (a room's code run for an app that is not of it: a bug, not a state to handle).
public enum RunShape: Sendable {
    case pairwise(any PairwiseApp)
    case group(any GroupApp, GroupLedgers)
    case mailbox(any MailboxApp, MailboxLedger)

    init(_ app: any AppProfile, metrics: Metrics) {
        switch app.shaped {
        case .pairwise(let app): self = .pairwise(app)
        case .group(let app): self = .group(app, GroupLedgers(metrics: metrics))
        case .mailbox(let app): self = .mailbox(app, MailboxLedger())
        }
    }
}

/// What a group app's run keeps across its phones: how long each phone's presence takes to reach its group, who should
/// have each chat line and photo or video and who did, each direct message sent to a partner online and whether it
/// arrived, each group's replay as its owner read it back.
public final class GroupLedgers: Sendable {
    public let convergence: PresenceConvergence
    public let media = ChatLedger()
    public let messages = ChatLedger()
    public let direct = DirectLedger()
    public let replays = ReplayLedger()

    init(metrics: Metrics) { convergence = PresenceConvergence(metrics: metrics) }
}

extension FleetContext {
    /// A pairwise run's app.
    var pairwiseApp: any PairwiseApp {
        guard case .pairwise(let app) = shaped else { preconditionFailure("a pairwise room's code in a \(app.shape) run") }
        return app
    }

    /// A group run's app and ledgers.
    var groupApp: any GroupApp {
        guard case .group(let app, _) = shaped else { preconditionFailure("a group room's code in a \(app.shape) run") }
        return app
    }

    var groupLedgers: GroupLedgers {
        guard case .group(_, let ledgers) = shaped else { preconditionFailure("a group room's code in a \(app.shape) run") }
        return ledgers
    }

    /// A mailbox run's app and its messages' ledger.
    var mailboxApp: any MailboxApp {
        guard case .mailbox(let app, _) = shaped else { preconditionFailure("a mailbox room's code in a \(app.shape) run") }
        return app
    }

    var mailbox: MailboxLedger {
        guard case .mailbox(_, let ledger) = shaped else { preconditionFailure("a mailbox room's code in a \(app.shape) run") }
        return ledger
    }

    /// The group ledgers', by name, for the group room's code.
    var convergence: PresenceConvergence { groupLedgers.convergence }
    var media: ChatLedger { groupLedgers.media }
    var messages: ChatLedger { groupLedgers.messages }
    var direct: DirectLedger { groupLedgers.direct }
    var replays: ReplayLedger { groupLedgers.replays }
}

extension VirtualDevice {
    /// The app as its room's shape, for that room's code.
    var pairwiseApp: any PairwiseApp { context.pairwiseApp }
    var groupApp: any GroupApp { context.groupApp }
    var mailboxApp: any MailboxApp { context.mailboxApp }
}

extension VirtualDevice {
    /// The app as one whose phones share positions over Realtime: what the core phone seals, sends to its shape, hears
    /// and opens (a mailbox phone connects to no Realtime and shares no position, so never asks).
    var locationApp: any LocationApp {
        guard let app = context.locations else { preconditionFailure("\(context.app.name)'s phones share no positions") }
        return app
    }

    /// The app as one whose users are friends in pairs: what the core phone pairs with (a group phone has a plan to pair
    /// with nobody, so never asks).
    var friendApp: any FriendApp {
        guard let app = context.friends else { preconditionFailure("\(context.app.name)'s users are not friends in pairs") }
        return app
    }
}
