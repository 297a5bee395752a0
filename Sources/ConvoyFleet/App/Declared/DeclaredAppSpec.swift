/// An app declared in a YAML file (docs/apps.md): every name and rule a team's own Supabase-style app has, read
/// by `AppFile` and run by `DeclaredApp` with no Swift of the team's own. Its strings are templates (docs/templates.md).
public struct DeclaredAppSpec: Sendable, Equatable {
    /// The app's name (results, the dashboard).
    public var name: String
    /// The file it was read from (errors name it).
    public var file: String
    /// The built-in backend that serves its tables on the embedded target (`backend: {embedded: greenbox}`).
    public var serves: String?
    /// Its SQL folder (`backend: {sql: ../migrations/mine}`, resolved against the file): what `convoy serve --app
    /// migrations` serves, on the embedded target too. Neither: the scenario must name a target.
    public var sqlFolder: String?
    public var keys: Keys
    public var links: Links
    public var posting: Posting
    /// The sealed plaintext: a JSON template over `DeclaredPlaintext.names` (`{{lat}}`, `{{time.iso}}`, …).
    public var plaintext: JSONTemplate
    public var receiving: Receiving
    public var retention: Retention
    /// Other calls a phone makes at a cadence, each timed under its name (`AppAction`).
    public var actions: [Action] = []
    /// Calls a phone makes once after sign-up (before it publishes a key): a profile row, an admin's approval.
    public var setup: [Write] = []
    /// Whether its phones share locations (keys, links, posting, plaintext, receiving and retention declared); false:
    /// an app with actions alone, whose location sections are empty and never read.
    public var sharesLocations = true
    /// The group shape's sections (`shape: group`): its phones broadcast to their group on a private channel instead
    /// of sealing rows to each friend; nil: the pairwise shape, whose keys, links, posting, receiving and retention are read.
    public var group: Group?

    /// `groups:` and `broadcast:` of an app of the group shape (docs/apps.md, "A group app").
    public struct Group: Sendable, Equatable {
        /// The table of groups, as the service key reads how each ended.
        public var table: String
        public var columns: Columns
        /// The owner's steps that create group `{{group.number}}`; they save its id as `group`.
        public var create: [Write]
        /// How each other member comes in, after `create`: steps by the owner (`{{member.id}}` names who) or by the
        /// member, in order.
        public var join: [Step]
        /// The owner's steps that end the group at the end of the run (`{{group.id}}`).
        public var end: [Write]
        /// The private channel's name over `{{group.id}}` (Realtime Authorization decides who joins, sends and tracks).
        public var topic: String
        /// The broadcast's event.
        public var event: String
        /// The payload field that names the sender (its user id), set beside the plaintext's own fields.
        public var sender: String
        /// What a phone tracks as its presence on the channel once joined, over `{{me.id}}` and `{{me.email}}`; nil: none.
        public var presence: [Field]?

        /// One of the presence's fields: its key, and its value as a template.
        public struct Field: Sendable, Equatable {
            public var key: String
            public var value: String
        }

        public struct Columns: Sendable, Equatable {
            public var id: String
            public var owner: String
            /// A timestamp, null while the group goes on.
            public var ended: String
        }

        public struct Step: Sendable, Equatable {
            public var byOwner: Bool
            public var write: Write
        }
    }

    /// The location sections of an app that has none (`sharesLocations` false): nothing in them is ever read.
    static func noLocations(name: String, file: String, serves: String?, sqlFolder: String?) -> DeclaredAppSpec {
        let none = Write(kind: .insert(table: ""), body: .object([]), save: [], source: "")
        var spec = DeclaredAppSpec(
            name: name, file: file, serves: serves, sqlFolder: sqlFolder,
            keys: Keys(table: "", owner: "", column: "", encoding: .base64, perDevice: false, newest: nil, publish: none, lookup: nil),
            links: Links(duringRun: false, steps: [], table: "", columns: .init(id: "", inviter: "", invitee: "", status: ""), active: "", pending: ""),
            posting: Posting(table: "", bulk: true, row: .object([]), sealed: .base64, phoneStamps: false), plaintext: .object([]),
            receiving: Receiving(table: "", filter: "", sender: "", body: "", id: "", topic: "\(name):{{me.id}}"),
            retention: Retention(window: nil, column: "", purge: .backend))
        spec.sharesLocations = false
        return spec
    }

    /// `actions:`: calls at a cadence beside the location sharing (docs/apps.md, "Actions").
    public struct Action: Sendable, Equatable {
        /// Its metric's name: a histogram thresholds can use (`ride_claim.p95`), and the `actions.<name>` counters.
        public var name: String
        public var every: ClosedRange<Double>
        /// The share of phones that make it, 0…1.
        public var share: Double
        /// In order, as the phone; `{{saved.…}}` carries a value from one to the next. A select that finds no row
        /// ends the action with nothing to act on (`action_skipped.<name>`).
        public var steps: [Write]
    }

    /// How bytes (a key, a sealed box) travel as text.
    public enum Encoding: String, Sendable, CaseIterable {
        case base64, hex
    }

    /// A write a phone makes: an insert, an upsert, an update of the rows `where` matches, or an RPC, with a JSON
    /// body; `save` keeps fields of the answer's first row as `{{saved.<name>}}` for the steps after it.
    public struct Write: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case insert(table: String)
            case upsert(table: String, onConflict: String)
            /// `where`: a PostgREST filter template (`id=eq.{{saved.link}}`); a write that changes no row fails.
            case update(table: String, where: String)
            case rpc(function: String)
            /// A read (actions only): `GET /rest/v1/<table>?<query>`, the query a template.
            case select(table: String, query: String)
        }

        public var kind: Kind
        public var body: JSONTemplate
        public var save: [Saved]
        /// Made with the project's service key (`as: service`: an admin's step in set-up), not the phone's token.
        public var asService = false
        /// `Prefer: return=minimal` (`return: minimal`): the answer has no rows, for a table the user may write but not
        /// read back.
        public var minimal = false
        /// Where it was declared (`links.steps[1]`), for errors.
        public var source: String

        public struct Saved: Sendable, Equatable {
            public var name: String
            public var column: String
        }
    }

    /// Where a user's box key lives and how it is written and read.
    public struct Keys: Sendable, Equatable {
        /// The table (`users`, or a devices table).
        public var table: String
        /// The column naming the key's owner (the user's id: `id` on a users table, `owner_id` on a devices table).
        public var owner: String
        /// The key's column.
        public var column: String
        public var encoding: Encoding
        /// One key per device (rows of a devices table, one per phone; the newest is sealed to) or one per user.
        public var perDevice: Bool
        /// The column that orders a user's devices, newest last (per device only).
        public var newest: String?
        /// How a phone publishes its key after sign-up (and after a reinstall).
        public var publish: Write
        /// How a phone looks up its friends' keys: a select of `owner`, `column` by owner (nil), or an RPC given
        /// `{{ids}}` (a JSON array of user ids) that answers rows with those two columns.
        public var lookup: Write?
    }

    /// How two users become friends.
    public struct Links: Sendable, Equatable {
        /// When the steps run: in set-up, before the timeline, or on the phones during the run (the invitee told over
        /// Realtime by a row of `table`).
        public var duringRun: Bool
        /// The steps, in order, each by the inviter or the invitee (the inviter's first); a pending friendship stops before
        /// the step that accepts. During the run, the inviter's steps come first and the invitee accepts with the rest.
        public var steps: [Step]
        /// The table of friendships, as the phones read it: whether one is active, which requests wait.
        public var table: String
        public var columns: Columns
        /// The status values: active, and pending.
        public var active: String
        public var pending: String
        /// Who shares once a link is active: both, or the inviter or the invitee alone (`sharing:`; default mutual).
        public var sharing: LinkSharing = .mutual

        public struct Step: Sendable, Equatable {
            public var byInvitee: Bool
            public var write: Write
            /// The step that makes the link active (`accepts: true`); none marked: the invitee's first.
            public var accepts = false
        }

        /// The friendship table's columns: its row id, who asked, who was asked, its status.
        public struct Columns: Sendable, Equatable {
            public var id: String
            public var inviter: String
            public var invitee: String
            public var status: String
        }

        /// Where the link is accepted: the step marked `accepts`, else the invitee's first.
        public var acceptIndex: Int { steps.firstIndex(where: \.accepts) ?? steps.firstIndex(where: \.byInvitee) ?? steps.count }
        /// The steps that ask (a pending link has made these) and those from the acceptance on.
        public var requestSteps: ArraySlice<Step> { steps[..<acceptIndex] }
        public var acceptSteps: ArraySlice<Step> { steps[acceptIndex...] }
    }

    /// How a phone posts its sealed updates.
    public struct Posting: Sendable, Equatable {
        public var table: String
        /// All of a tick's rows in one insert (true), or one insert per recipient.
        public var bulk: Bool
        /// One row, over `{{me.id}}`, `{{recipient.id}}`, `{{sealed}}` and `{{now.*}}`.
        public var row: JSONTemplate
        public var sealed: Encoding
        /// The phone writes the row's time (its row names `{{now.…}}` in the retention column); false: the server.
        public var phoneStamps: Bool
    }

    /// How a phone hears its friends' updates: `postgres_changes` INSERTs on `table` under `filter`.
    public struct Receiving: Sendable, Equatable {
        public var table: String
        /// A PostgREST filter over `{{me.id}}` (`recipient_id=eq.{{me.id}}`): the subscription's and the catch-up's.
        public var filter: String
        public var sender: String
        public var body: String
        public var id: String
        /// The channel's name, over `{{me.id}}`.
        public var topic: String
    }

    /// How long rows live, by which column, and who removes them.
    public struct Retention: Sendable, Equatable {
        /// Seconds; nil: the scenario's (`retention.window`).
        public var window: Double?
        /// The column whose age counts.
        public var column: String
        public var purge: Purge

        public enum Purge: Sendable, Equatable {
            /// The backend purges by itself (a built-in one, pg_cron): Convoy only checks.
            case backend
            /// `convoy serve` deletes `table`'s rows whose retention column is older than the window.
            case delete(table: String)
            /// `convoy serve` calls this function with the window as an interval (PostgreSQL only).
            case function(String)
        }
    }
}
