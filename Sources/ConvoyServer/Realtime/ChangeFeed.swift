import ConvoyJSON
import Foundation
import GRDB

/// Committed row changes on their way to Realtime subscribers: the one path
/// into the hub, whichever store committed them, in commit order. A store
/// feeds it what it committed, whoever wrote the rows (a REST request, an
/// app's RPC, psql); neither the stores' tables nor an app's RPCs talk to the
/// hub. The feed finds the subscribers whose bindings match (the hub's filter
/// index) and sends each change only to those the store's row-level security
/// lets read its row:
///
/// - SQLite (`publish(_:)`): the rows as written, collected by
///   `SQLiteTransaction` and handed over right after COMMIT on the writer's
///   queue; the app's Swift policies decide who may read each.
/// - PostgreSQL (`publish(_:of:reader:)`): the rows `PostgresChanges` read
///   after the database announced them; PostgreSQL decides, reading each row
///   again as each subscriber (`SubscriberReader`).
final class ChangeFeed: Sendable {
    let hub: RealtimeHub
    /// The app's Swift policies (SQLite store); nil when PostgreSQL checks RLS itself.
    let policies: Policies?

    init(hub: RealtimeHub, policies: Policies?) {
        self.hub = hub
        self.policies = policies
    }

    /// Whether anyone subscribes to changes of `table` (else there is nothing to route).
    func hasSubscribers(table: String) -> Bool { hub.hasSubscribers(table: table) }

    // MARK: - Rows known as written (SQLite)

    /// Fans committed changes out, in order, to every subscriber whose binding
    /// matches and whose role may read the row by the Swift policies, asked
    /// in `db` just after the commit (a policy that fails hides the row).
    func publish(_ changes: [ChangeEvent], in db: Database) {
        for change in changes {
            let candidates = hub.route(change)
            if change.type == "DELETE" {
                // No row to check (its old record is its key): as Supabase does, and the PostgreSQL store, to the matching
                // subscribers whose role may read the table.
                hub.deliver(change, to: candidates.filter { mayRead(change.table, $0.member.principal) })
                continue
            }
            hub.deliver(change, to: candidates.filter { visible(change.record, table: change.table, to: $0.member.principal, db) })
        }
    }

    /// Whether `who`'s role reads `table` at all: the service role, and a signed-in user where a policy lets it select.
    private func mayRead(_ table: String, _ who: Principal) -> Bool {
        switch who.role {
        case .serviceRole: true
        case .anon: false
        case .authenticated: policies?.tables[table]?.readable != nil
        }
    }

    private func visible(_ record: [String: DatabaseValue], table: String, to who: Principal, _ db: Database) -> Bool {
        switch who.role {
        case .serviceRole: return true
        case .anon: return false
        case .authenticated:
            guard let uid = who.userID, let check = policies?.tables[table]?.readable else { return false }
            return (try? check(record, uid, db)) ?? false
        }
    }

    // MARK: - Rows the database checks (PostgreSQL)

    /// A change the database announced: as the server read its row (`json`,
    /// nil for a DELETE, whose row is gone), and the row's key as text.
    struct Announced {
        var change: ChangeEvent
        var keyText: String
        var json: String?
    }

    /// One table's changes, in commit order: routed by the row as the server
    /// read it, then read again as each matching subscriber (`reader`: RLS
    /// decides, in one statement with the read), and what that read returned
    /// is sent.
    func publish(_ changes: [Announced], of table: String, reader: any SubscriberReader) async throws {
        var deletes: [(ChangeEvent, [RealtimeHub.Delivery])] = []
        var reads: [(announced: Announced, candidate: RealtimeHub.Delivery)] = []
        for announced in changes {
            let candidates = hub.route(announced.change)
            if announced.json == nil {
                if !candidates.isEmpty { deletes.append((announced.change, candidates)) }
            } else {
                reads += candidates.map { (announced, $0) }
            }
        }
        if !reads.isEmpty {
            let keys = reads.map(\.announced.keyText), subscribers = reads.map(\.candidate.member.principal)
            let visible: [Int: String]
            do {
                visible = try await reader.read(table, keys: keys, as: subscribers, guarded: false)
            } catch {
                // A read failed (a missing grant, a broken policy): again, each read on its own.
                visible = try await reader.read(table, keys: keys, as: subscribers, guarded: true)
            }
            for (i, (announced, candidate)) in reads.enumerated() {
                guard let json = visible[i + 1] else { continue }
                let routed = announced.change
                // Usually the subscriber reads what the server read: that change, as routed.
                if json == announced.json {
                    hub.deliver(routed, to: [candidate])
                    continue
                }
                guard let record = PostgresTables.parse(json), case .object = record else { continue }
                // What this subscriber may see, checked against its bindings again.
                let change = ChangeEvent(table: table, type: routed.type, recordJSON: record, oldRecordJSON: routed.oldRecordJSON,
                                         commitTimestamp: routed.commitTimestamp)
                var delivery = candidate
                delivery.ids = candidate.member.bindings.filter { $0.matches(change) }.map(\.id)
                if !delivery.ids.isEmpty { hub.deliver(change, to: [delivery]) }
            }
        }
        if !deletes.isEmpty {
            // No row to check: as Supabase does, to the matching subscribers whose role may SELECT the table.
            let allowed = try await reader.roles(Set(deletes.flatMap { $0.1.map(\.member.principal.role) }), maySelect: table)
            for (change, candidates) in deletes {
                hub.deliver(change, to: candidates.filter { allowed.contains($0.member.principal.role) })
            }
        }
    }
}

/// How the database decides what each subscriber may read of a change
/// (PostgreSQL: its own RLS, as Supabase checks each subscriber).
protocol SubscriberReader: Sendable {
    /// Position (1-based) → the row of `table` whose key is `keys[i]`, as
    /// `subscribers[i]` may read it (JSON); absent where they may not. With
    /// `guarded`, a read that fails yields nothing instead of failing them all.
    func read(_ table: String, keys: [String], as subscribers: [Principal], guarded: Bool) async throws -> [Int: String]
    /// Which of `roles` may SELECT `table` (a DELETE has no row left to check).
    func roles(_ roles: Set<Principal.Role>, maySelect table: String) async throws -> Set<Principal.Role>
}
