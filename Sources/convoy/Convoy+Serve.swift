import ArgumentParser
import ConvoyFleet
import ConvoyServer
import ConvoySodium
import Foundation
import Logging
import UnixSignals

extension Convoy {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Run the reference backend of an app: Supabase-compatible (Green Box, Survale, a declared app's SQL) or the app's own API (QuickPic, Closer's callables).",
            discussion: """
                Serves one app's backend (--app; Green Box by default: greenbox-prd.md §3's schema and \
                policies, its invite RPCs and its retention purge) behind /auth/v1 (GoTrue), /rest/v1 \
                (PostgREST), /realtime/v1/websocket (Phoenix v1).

                Storage is an embedded SQLite database (the app's policies enforced in Swift) unless --database is a \
                postgres:// URL: then the server applies the app's SQL (and --migrations), runs every \
                request as its role with its JWT claims so PostgreSQL enforces RLS, serves every table of \
                the public schema, and feeds Realtime from LISTEN/NOTIFY (docs/server.md).

                The anon and service_role keys are JWTs signed with the JWT secret. Both are printed at \
                start; with --keys-file they are written there (0600) and only the anon key is printed.

                Each connection is held to limits against hostile clients (docs/server.md): the header, body \
                and idle timeouts below; a head over 64 KiB, a header field or request line over 16 KiB or more \
                than 100 header fields is answered 431, a request that cannot be parsed 400, a body over 64 KiB \
                413, each with the connection closed. Realtime closes on unmasked frames (1002) and text that \
                is not UTF-8 (1007).

                Storage (/storage/v1: buckets, uploads, signed URLs, downloads, removal) keeps object rows in the \
                database under its row-level security and object bytes on disk (--storage-dir); no upload stores \
                more than --storage-file-limit.

                --app quickpic serves QuickPic's own REST API instead (docs/quickpic-api.md): /auth/register|login|\
                refresh|logout, /users/:username, /friends…, /messages and /messages/:id/ack, over the same two \
                stores; it has no API keys (the keys file holds only the URL), access tokens of --token-ttl (15m) \
                and a fallback purge every --purge-every (1h) of messages older than --retention (7d).
                """)

        @Option(help: ArgumentHelp("The app whose backend to serve: its tables, row-level security, RPCs and purge (\(ServerApps.names.joined(separator: ", "))).",
                                   valueName: "name"))
        var app = ServerApps.defaultName

        @Option(help: "Address to listen on.")
        var host = "127.0.0.1"

        @Option(help: "Port (0: a free one).")
        var port = 3010

        @Option(help: ArgumentHelp("SQLite file, or postgres://user:pass@host:port/db[?sslmode=disable|prefer|require] (default: a new SQLite file in a temporary directory, removed at exit).",
                                   valueName: "path|url"))
        var database: String?

        @Option(help: ArgumentHelp("PostgreSQL only: apply each *.sql file here once, in name order, after the app's schema.",
                                   valueName: "dir"))
        var migrations: String?

        @Option(name: .customLong("app-file"), help: ArgumentHelp(
            "Serve an app declared in a file (docs/apps.md): its SQL folder (backend: {sql: …}) alone, as --app migrations --migrations DIR, with its purge (retention.purge) and window; on SQLite or PostgreSQL.",
            valueName: "file"))
        var appFile: String?

        @Option(name: .customLong("app-schema"), help: ArgumentHelp(
            "PostgreSQL only: built-in (apply the app's SQL at start) or database (serve the app's tables as the database has them, e.g. loaded from `convoy schema APP`; only the platform's SQL is applied).",
            valueName: "built-in|database"))
        var appSchema: ServerConfiguration.AppSchema = .builtIn

        @Option(name: .customLong("pg-pool"), help: "PostgreSQL only: most connections for requests (Realtime's LISTEN has one more of its own).")
        var pgPool = 20

        @Option(name: .customLong("jwt-secret"), help: "HS256 secret for tokens and API keys (default: random).")
        var jwtSecret: String?

        @Option(name: .customLong("keys-file"), help: "Write {url, anon_key, service_role_key} here, mode 0600.")
        var keysFile: String?

        @Option(help: "The app's purge deletes what is older than this (default: the app's; Green Box: encrypted_locations after 10m; Survale: everything of an operation 7d after it ended; e.g. 10m, 20s).")
        var retention: DurationArgument?

        @Option(name: .customLong("auto-end"), help: "Survale: an active operation ends when every member has been off its channels this long.")
        var autoEnd: DurationArgument = DurationArgument(argument: "10m")!

        @Option(name: .customLong("purge-every"), help: "Run the purge this often; 0 disables it (default: 1m; QuickPic's cron: 1h).")
        var purgeEvery: DurationArgument?

        @Option(name: .customLong("token-ttl"), help: "Lifetime of access tokens (default: 1h; QuickPic: 15m).")
        var tokenTTL: DurationArgument?

        @Flag(name: .customLong("keep-acked"), help: "QuickPic, weakened: an ACK is answered and deletes nothing (to show a run catching it).")
        var keepAcked = false

        @Option(help: ArgumentHelp("Weakened on purpose, to show a run or probes catching it: QuickPic's \(QuickPicWeakness.allCases.map(\.rawValue).joined(separator: ", ")); Closer's \(CloserWeakness.allCases.map(\.rawValue).joined(separator: ", ")).",
                                   valueName: "NAME,…"))
        var weaken: String?

        @Option(name: .customLong("invite-ttl"), help: "How long an invite code lives (default: the app's; Green Box 7d, Closer 24h).")
        var inviteTTL: DurationArgument?

        @Option(name: .customLong("question-every"), help: "Closer: how often every couple gets a new daily question (default 24h, the manual's day; shorter for a load test).")
        var questionEvery: DurationArgument?

        @Option(name: .customLong("reminder-every"), help: "Closer: how often scheduledOutcomesReminder reads every couple (default 1m, the manual's cron; 0 turns it off).")
        var reminderEvery: DurationArgument?

        @Option(name: .customLong("outcome-day"), help: "Closer: how long a day of a couple's age lasts for its 30/60/90-day outcome reminders (default 24h; shorter for a load test).")
        var outcomeDay: DurationArgument?

        @Option(name: .customLong("existing-couples"), help: "Closer: couples the server holds before any phone comes, 0–120 days old, that scheduledOutcomesReminder reads every scan (default 0).")
        var existingCouples: Int?

        @Option(name: .customLong("login-limit"), help: "QuickPic: failed logins per username within --login-window before 429 (20× that per client address).")
        var loginLimit = 5

        @Option(name: .customLong("login-window"), help: "QuickPic: the login limit's sliding window.")
        var loginWindow: DurationArgument = DurationArgument(argument: "15m")!

        @Option(name: .customLong("header-timeout"), help: "A request's head must be complete this long after its first byte (later: 408 and closed).")
        var headerTimeout: DurationArgument = DurationArgument(argument: "10s")!

        @Option(name: .customLong("body-timeout"), help: "A request's body must be complete this long after its head (later: 408 and closed).")
        var bodyTimeout: DurationArgument = DurationArgument(argument: "30s")!

        @Option(name: .customLong("idle-timeout"), help: "Close a connection with no request under way, or a Realtime socket whose client sent nothing, after this long.")
        var idleTimeout: DurationArgument = DurationArgument(argument: "60s")!

        @Option(name: .customLong("storage-dir"), help: ArgumentHelp(
            "Where Storage keeps object bytes (default: beside the SQLite file, as FILE.objects; with PostgreSQL a temporary directory removed at exit).",
            valueName: "dir"))
        var storageDir: String?

        @Option(name: .customLong("storage-file-limit"), help: ArgumentHelp(
            "The largest object an upload may store (50MB, 1.5GB, 300KB or bytes); a bucket's file_size_limit can only lower it.",
            valueName: "size"))
        var storageFileLimit: FileSizeArgument = FileSizeArgument(argument: "50MB")!

        @Flag(name: .customLong("strict-policies"), help: "The app's stricter policies (Green Box: only let users post locations to active friends; the PRD lets them post to anyone).")
        var strictPolicies = false

        @Option(name: .customLong("rate-limits"), help: ArgumentHelp(
            "supabase: hosted Supabase Auth's per-IP limits (sign-ups and sign-ins 30, refreshes 150, per 5 minutes); off: none, for load runs that sign up many phones from one address; or a rate-limits YAML file, on top of Supabase's (docs/server.md). A --migrations folder's rate-limits.yaml adds its own unless off.",
            valueName: "supabase|off|FILE"))
        var rateLimits = "supabase"

        @Option(name: .customLong("password-cost"), help: "Argon2id cost: minimum (load tests) or interactive (libsodium's login default).")
        var passwordCost = "minimum"

        func validate() throws {
            guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0…65535") }
            if let s = jwtSecret, s.utf8.count < ServerConfiguration.minimumSecretBytes {
                throw ValidationError("--jwt-secret must be at least \(ServerConfiguration.minimumSecretBytes) bytes (it has \(s.utf8.count))")
            }
            if let tokenTTL { guard tokenTTL.seconds >= 1 else { throw ValidationError("--token-ttl must be at least 1s") } }
            guard loginLimit >= 1 else { throw ValidationError("--login-limit must be at least 1") }
            if keepAcked, app != QuickPicServer.appName { throw ValidationError("--keep-acked is QuickPic's: add --app quickpic") }
            if let weaken {
                var probe = ServerConfiguration(app: app)
                switch ServerApps.weaken(weaken, into: &probe) {
                case nil:
                    let apps = ServerApps.weakenable
                    throw ValidationError("--weaken is for \(apps.joined(separator: " and ")): add \(apps.map { "--app \($0)" }.joined(separator: " or "))")
                case .failure(let e)?: throw ValidationError(e.description)
                case .success?: break
                }
            }
            if let inviteTTL { guard inviteTTL.seconds >= 1 else { throw ValidationError("--invite-ttl must be at least 1s") } }
            if questionEvery != nil || reminderEvery != nil || outcomeDay != nil || existingCouples != nil, app != "closer" {
                throw ValidationError("--question-every, --reminder-every, --outcome-day and --existing-couples are Closer's: add --app closer")
            }
            if let questionEvery { guard questionEvery.seconds >= 1 else { throw ValidationError("--question-every must be at least 1s") } }
            if let retention { guard retention.seconds > 0 else { throw ValidationError("--retention must be > 0") } }
            guard autoEnd.seconds > 0 else { throw ValidationError("--auto-end must be > 0") }
            guard ["minimum", "interactive"].contains(passwordCost) else {
                throw ValidationError("--password-cost is minimum or interactive")
            }
        }

        func run() async throws {
            var logger = Logger(label: "convoy.serve")
            logger.logLevel = .info
            var declared: DeclaredAppSpec?
            if let appFile {
                do {
                    declared = try AppFile.load(appFile)
                } catch {
                    throw CommandFailure.badInput("\(error)")
                }
                guard declared?.sqlFolder != nil else {
                    throw CommandFailure.badInput("--app-file \(appFile): names no SQL folder (backend: {sql: FOLDER}); serve its built-in backend with --app")
                }
                guard migrations == nil else { throw CommandFailure.badInput("--app-file serves the file's SQL folder: drop --migrations") }
            }
            let app = declared == nil ? self.app : "migrations"
            var config = ServerConfiguration(
                host: host, port: port, databasePath: database, jwtSecret: jwtSecret,
                retention: retention?.seconds ?? ServerApps.defaultRetention(of: app) ?? 600,
                purgeEvery: purgeEvery?.seconds ?? ServerApps.defaultPurgeEvery(of: app),
                tokenTTL: tokenTTL?.seconds ?? ServerApps.defaultTokenTTL(of: app), strictPolicies: strictPolicies,
                passwordHash: passwordCost == "interactive" ? .interactive : .minimum,
                migrationsDirectory: migrations, postgresConnections: pgPool, app: app)
            config.appSchema = appSchema
            if let declared {
                declared.serve(into: &config)
                if retention == nil, let window = declared.retention.window { config.retention = window }
            }
            config.autoEndAfter = autoEnd.seconds
            config.limits.headerTimeout = headerTimeout.seconds
            config.limits.bodyTimeout = bodyTimeout.seconds
            config.limits.idleTimeout = idleTimeout.seconds
            config.objectStorageDirectory = storageDir
            config.objectSizeLimit = storageFileLimit.bytes
            if let weaken { _ = ServerApps.weaken(weaken, into: &config) }
            config.inviteTTL = inviteTTL?.seconds ?? ServerApps.defaultInviteTTL(of: app)
            if let questionEvery { config.questionEvery = questionEvery.seconds }
            if let reminderEvery { config.reminderEvery = reminderEvery.seconds }
            if let outcomeDay { config.outcomeDay = outcomeDay.seconds }
            if let existingCouples { config.existingCouples = existingCouples }
            if keepAcked { config.quickPicWeaknesses.insert(.keepAcked) }
            config.loginLimit = loginLimit
            config.loginWindow = loginWindow.seconds
            switch rateLimits {
            case "off": config.rateLimitsEnabled = false
            case "supabase": config.rateLimits = .supabase
            case let file:
                do {
                    config.rateLimits = RateLimits.supabase.merging(try RateLimitFile.load(file))
                } catch {
                    throw CommandFailure.badInput(error.description)
                }
            }
            do {
                try config.validate()
            } catch {
                throw CommandFailure.badInput(error.description)
            }
            if let keysFile {
                // Found out now, not once serving: a CI job waiting for the file would wait for ever.
                let folder = URL(fileURLWithPath: keysFile).deletingLastPathComponent().path
                var isFolder: ObjCBool = false
                guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                    throw CommandFailure.badInput("--keys-file \(keysFile): the folder \(folder) does not exist")
                }
                guard FileManager.default.isWritableFile(atPath: folder) else {
                    throw CommandFailure.badInput("--keys-file \(keysFile): the folder \(folder) is not writable")
                }
            }
            let server: any BackendServer
            do {
                server = try await BackendServers.make(config, logger: logger)
            } catch let error as ServerConfiguration.Invalid {
                throw CommandFailure.badInput(error.description)
            } catch {
                throw CommandFailure.runtime("cannot open the database: \(error)")
            }
            do {
                try await serve(server, keysFile: keysFile)
            } catch let error as CannotListen {
                throw CommandFailure.runtime(error.description)
            }
        }

        private func serve(_ server: any BackendServer, keysFile: String?) async throws {
            let apiKeys = server.hasAPIKeys
            try await server.run(gracefulShutdownSignals: [.sigterm, .sigint]) { keys in
                // Unbuffered, so a parent process sees the keys at once.
                var text = "convoy serve: listening on \(keys.url)\n"
                if apiKeys { text += "  anon key:         \(keys.anonKey)\n" }
                // The service_role key bypasses RLS: on screen only when there is no keys file.
                if apiKeys, keysFile == nil { text += "  service_role key: \(keys.serviceRoleKey)\n" }
                if let keysFile {
                    do {
                        try keys.write(to: keysFile)
                        text += "  keys written to \(keysFile) (0600)\n"
                    } catch {
                        // Nobody could use a server whose keys are nowhere: stop, as a failed start.
                        FileHandle.standardError.write(Data("convoy: error: cannot write \(keysFile): \(error)\n".utf8))
                        Foundation.exit(ExitStatus.runtimeFailure.rawValue)
                    }
                }
                FileHandle.standardOutput.write(Data(text.utf8))
            }
        }
    }
}
