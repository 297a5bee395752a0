import Foundation
import GRDB

/// Realtime Authorization, as Supabase does it for private channels
/// (`config.private: true`): a join, a broadcast or a presence track is
/// allowed only when a row-level security policy on `realtime.messages` lets
/// the user read (receive) or insert (send) a row whose topic is the channel's
/// (`realtime.topic()`) and whose `extension` is `broadcast` or `presence`.
/// Supabase computes the read permissions when the channel is joined and again
/// when its token is refreshed, the write permissions at the first send or
/// track after that, and never per message (supabase/realtime,
/// `Realtime.Tenants.Authorization`). Public channels are not checked.
enum RealtimeExtension: String, Sendable, CaseIterable {
    case broadcast, presence
}

/// Reading a channel's messages (joining, receiving) or writing them (sending, tracking).
enum ChannelAction: String, Sendable {
    case read, write
}

/// What a user may do on one private channel, as its policies said when they
/// were last computed; a write permission not yet computed is nil.
struct ChannelPolicies: Sendable, Equatable {
    var broadcastRead = false
    var presenceRead = false
    var broadcastWrite: Bool?
    var presenceWrite: Bool?

    /// Supabase lets a channel be joined when either extension may be read.
    var mayJoin: Bool { broadcastRead || presenceRead }

    static let everything = ChannelPolicies(broadcastRead: true, presenceRead: true, broadcastWrite: true, presenceWrite: true)
}

/// Asks a store's row-level security what `who` may do on the private channel
/// named `topic` (without the `realtime:` prefix: what `realtime.topic()` returns).
protocol ChannelAuthorizer: Sendable {
    /// Whether `who` may read (`.read`) or write (`.write`) each extension's messages on `topic`.
    func allowed(_ action: ChannelAction, topic: String, as who: Principal) async throws -> (broadcast: Bool, presence: Bool)
}

extension ChannelAuthorizer {
    /// The read permissions, computed afresh (a join, a token refresh).
    func readPolicies(topic: String, as who: Principal) async throws -> ChannelPolicies {
        let (broadcast, presence) = try await allowed(.read, topic: topic, as: who)
        return ChannelPolicies(broadcastRead: broadcast, presenceRead: presence)
    }

    /// `policies` with the write permissions computed, if they were not yet.
    func withWritePolicies(_ policies: ChannelPolicies, topic: String, as who: Principal) async throws -> ChannelPolicies {
        guard policies.broadcastWrite == nil || policies.presenceWrite == nil else { return policies }
        let (broadcast, presence) = try await allowed(.write, topic: topic, as: who)
        var out = policies
        (out.broadcastWrite, out.presenceWrite) = (broadcast, presence)
        return out
    }
}

/// Realtime Authorization on the SQLite store: the app's Swift policy
/// (`ServerApp.realtimeAllows`), written beside the SQL policy on
/// `realtime.messages` it mirrors, read in one snapshot. The service role
/// bypasses it, as it bypasses RLS.
struct SQLiteChannelAuthorizer: ChannelAuthorizer {
    let store: Store
    let app: any ServerApp

    func allowed(_ action: ChannelAction, topic: String, as who: Principal) async throws -> (broadcast: Bool, presence: Bool) {
        if who.role == .serviceRole { return (true, true) }
        let app = self.app
        return try await store.pool.read { db in
            (try app.realtimeAllows(action, .broadcast, topic: topic, as: who, in: db),
             try app.realtimeAllows(action, .presence, topic: topic, as: who, in: db))
        }
    }
}

/// Realtime Authorization on PostgreSQL: `auth.channel_access` (in
/// `002_realtime_authorization.sql`) inserts the probe rows, takes the user's
/// role and claims with `realtime.topic()` set, reads or inserts as the user,
/// and rolls everything back, in one statement; PostgreSQL's RLS decides.
struct PostgresChannelAuthorizer: ChannelAuthorizer {
    let store: PostgresStore

    func allowed(_ action: ChannelAction, topic: String, as who: Principal) async throws -> (broadcast: Bool, presence: Bool) {
        let allowed = try await store.channelAccess(action, topic: topic, as: who)
        return (allowed.contains(RealtimeExtension.broadcast.rawValue), allowed.contains(RealtimeExtension.presence.rawValue))
    }
}
