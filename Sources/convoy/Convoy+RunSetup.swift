import ConvoyFleet
import ConvoyServer
import ConvoyWire
import Foundation
import Logging

/// What `convoy run` checks and reads before it starts: open files, times, keys files.
extension Convoy.Run {
        /// Two descriptors per device (its HTTP connection and its websocket), and the embedded
        /// backend's side of each: ask for 1,048,576 (what a privileged process may take), else the hard limit.
        static func raiseOpenFileLimit(_ logger: Logger) {
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
            var limit = rlimit()
            guard getrlimit(resource, &limit) == 0 else { return }
            let old = limit.rlim_cur
            var wanted = rlimit(rlim_cur: max(limit.rlim_max, 1_048_576), rlim_max: max(limit.rlim_max, 1_048_576))
            if setrlimit(resource, &wanted) != 0 {
                wanted = rlimit(rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max)
                guard setrlimit(resource, &wanted) == 0 else { return }
            }
            if wanted.rlim_cur != old { logger.info("open-file limit raised from \(old) to \(wanted.rlim_cur)") }
        }

        /// Connections of the shared pool (`--pooled-connections`).
        static let poolSize = 256

        /// A run needs a descriptor per device for its websocket, one more per device
        /// for its own HTTP connection, and as many again for the embedded backend's
        /// ends. Running out mid-run is a crash (libdispatch cannot open /proc), so
        /// say so before anything starts.
        static func checkOpenFileLimit(devices: Int, pooled: Bool, embedded: Bool) throws {
            var limit = rlimit()
            guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
            let perDevice = (pooled ? 1 : 2) * (embedded ? 2 : 1)
            let needed = devices * perDevice + (pooled ? poolSize : 0) + 512
            guard UInt64(needed) > UInt64(limit.rlim_cur) else { return }
            var advice = "raise it (ulimit -n; the hard limit here is \(limit.rlim_max))"
            if !pooled { advice += ", or share one HTTP pool (--pooled-connections)" }
            if embedded { advice += ", or run convoy serve as its own process (--keys-file)" }
            throw CommandFailure.runtime("\(devices) devices need about \(needed) open files and the limit is \(limit.rlim_cur): \(advice)")
        }

        /// RFC 3339 (with or without fractional seconds) or Unix seconds.
        static func parseTime(_ text: String) -> Double? {
            if let n = Double(text), n.isFinite, n > 0 { return n }
            let f = ISO8601DateFormatter()
            if let d = f.date(from: text) { return d.timeIntervalSince1970 }
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return f.date(from: text)?.timeIntervalSince1970
        }

        /// A keys file given on the command line is relative to here; one in a scenario, to the scenario's folder too
        /// (nil: here only).
        static func readKeys(_ path: String, relativeTo scenario: String?) throws -> SupabaseTarget {
            var candidates = [path]
            if !path.hasPrefix("/"), let scenario {
                candidates.append(URL(fileURLWithPath: scenario).deletingLastPathComponent().appendingPathComponent(path).path)
            }
            guard let file = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }),
                  let data = FileManager.default.contents(atPath: file)
            else { throw CommandFailure.badInput("keys file \(path): not found") }
            struct Keys: Decodable {
                var url: String
                var anon_key: String
                var service_role_key: String?
            }
            guard let keys = try? JSONDecoder().decode(Keys.self, from: data)
            else { throw CommandFailure.badInput("keys file \(file): expected {\"url\", \"anon_key\", \"service_role_key\"}") }
            return SupabaseTarget(url: keys.url, anonKey: keys.anon_key, serviceKey: keys.service_role_key)
        }
}

extension Convoy.Run {
    /// The embedded backend for `scenario`: its app's server side, the scenario's retention (a group app's own
    /// unless the scenario checks retention: its window then counts from each group's end) and the groups'
    /// auto-end time.
    static func embeddedConfiguration(_ scenario: Scenario) -> ServerConfiguration {
        // A declared app's tables are served by the built-in backend it names (`backend: {embedded: greenbox}`), or are its
        // own SQL folder's (`backend: {sql: …}`).
        let serverApp = scenario.app.declared.map { $0.serves ?? ($0.sqlFolder == nil ? "" : "migrations") } ?? scenario.app.name
        let retention = scenario.retentionCountsFromGroupEnd && scenario.retention.checkEvery == 0
            ? (ServerApps.defaultRetention(of: serverApp) ?? scenario.retention.window) : scenario.retention.window
        var configuration = ServerConfiguration(port: 0, retention: retention, purgeEvery: scenario.retention.purgeEvery)
        if ServerApps.names.contains(serverApp) { configuration.app = serverApp }
        configuration.autoEndAfter = scenario.social.autoEnd
        configuration.tokenTTL = scenario.tokenTTL ?? ServerApps.defaultTokenTTL(of: configuration.app)
        configuration.inviteTTL = scenario.social.inviteTTL ?? ServerApps.defaultInviteTTL(of: configuration.app)
        if let every = scenario.social.questionEvery { configuration.questionEvery = every }
        if let day = scenario.social.outcomeDay { configuration.outcomeDay = day }
        if let every = scenario.social.reminderEvery { configuration.reminderEvery = every }
        if let n = scenario.social.existingCouples { configuration.existingCouples = n }
        if let declared = scenario.app.declared, declared.sqlFolder != nil { declared.serve(into: &configuration) }
        return configuration
    }
}
