import ConvoyJSON
import ConvoyTime
import Foundation
import PostgresNIO

extension PostgresStore {
    /// The extensions (`broadcast`, `presence`) whose messages `who` may read
    /// or write on the private channel `topic`, as the database's policies on
    /// `realtime.messages` say: one call of `auth.channel_access`, which rolls
    /// its probe back. The service role bypasses RLS here as everywhere.
    func channelAccess(_ action: ChannelAction, topic: String, as who: Principal) async throws -> Set<String> {
        var binds = PostgresBindings()
        binds.append(who.role.rawValue)
        binds.append(who.claimsJSON)
        binds.append(Timestamps.format(clock.date))
        binds.append(topic)
        binds.append(action.rawValue)
        do {
            let text = try await client.withConnection { connection in
                try await Self.text(connection, PostgresQuery(unsafeSQL: "SELECT auth.channel_access($1, $2, $3, $4, $5)", binds: binds),
                                    logger: logger)
            }
            let names = text.flatMap { JSONScanner.parse($0)?.strings } ?? []
            return Set(names)
        } catch {
            throw Self.translate(error, role: who.role)
        }
    }
}
