import ConvoyTime
import Foundation
import GRDB

/// What an app's periodic housekeeping (Survale's auto-end) works with: its
/// store, the server's clock and configuration, and who is on Realtime now.
struct HousekeepingContext: Sendable {
    /// The SQLite store's context; nil on PostgreSQL.
    let sqlite: SQLiteAppContext?
    /// The PostgreSQL store; nil on SQLite.
    let postgres: PostgresStore?
    let clock: any ConvoyClock
    let configuration: ServerConfiguration
    /// The users joined to each private channel now, by channel name (without
    /// `realtime:`), the service role left out. Read-only: apps never talk to
    /// the hub.
    let channelUsers: @Sendable () -> [String: Set<String>]
}

extension ServerApp {
    /// No housekeeping by default.
    func housekeepingEvery(_ configuration: ServerConfiguration) -> Double? { nil }

    func housekeeping(_ context: HousekeepingContext) async throws -> [String] { [] }

    /// The retention a server keeps this app's data for unless told (`--retention`), seconds.
    var defaultRetention: Double { 600 }
}
