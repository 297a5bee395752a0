import ArgumentParser
import ConvoyFleet
import ConvoyServer
import ConvoyWire
import Foundation
import Logging

extension Convoy {
    /// `convoy app`: a declared app's file (docs/apps.md).
    struct App: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Work with an app declared in a file (docs/apps.md).",
            subcommands: [Check.self])

        /// `convoy app check FILE`: the dry run before a load test.
        struct Check: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Check a declared app against a backend, step by step, before a load test.",
                discussion: """
                    Reads FILE (an unknown key, a wrong type or an unknown placeholder is an error at its line and \
                    column), then, as two new users: signs up and publishes each key, looks the friend's key up, \
                    subscribes on Realtime, links them (the file's steps, and the invitee told over Realtime when \
                    links run during the run), posts one sealed update, hears it, opens it into the declared plaintext, \
                    reads it back as a catch-up does, and reads its retention column; then makes each of its actions \
                    once, with one-directional links checks the side that does not share is refused, and makes the \
                    purge as convoy serve does (delete: the row just posted must stay, a row the phone stamped past \
                    the window must go). An app of \
                    actions alone: sign-up and set-up, then its actions. A group app (shape: group), as an owner, a \
                    member and a stranger: makes the group by its steps, joins owner and member to its private channel \
                    and asks to join as the stranger (who must be refused), sees presence, broadcasts one fix the \
                    member hears and reads back, ends the group and reads it ended. Each step prints ok, FAILED with \
                    the request and the answer, or "not tested" and why. Without --target or --keys-file it checks \
                    against the embedded backend the file names (backend: {embedded: …} or {sql: …}).
                    Exit: 0 every step worked, 1 a step failed, 2 a bad file or flags.
                    """)

            @Argument(help: "The app's YAML file (e.g. examples/apps/greenbox-prd.yaml).")
            var file: String

            @Option(help: "The backend's URL (a Supabase project or convoy serve).")
            var target: String?

            @Option(name: .customLong("anon-key"), help: "Its anon key.")
            var anonKey: String?

            @Option(name: .customLong("keys-file"), help: "What `convoy serve --keys-file` wrote: {url, anon_key, service_role_key}.")
            var keysFile: String?

            @Option(help: "Seconds to wait for each Realtime message.")
            var wait: Double = 5

            func validate() throws {
                if target != nil, anonKey == nil { throw ValidationError("--target needs --anon-key") }
                if target != nil, keysFile != nil { throw ValidationError("give --target or --keys-file, not both") }
                if let target, let problem = TargetURL.problem(target) { throw ValidationError(problem) }
                if !(wait > 0 && wait <= 120) { throw ValidationError("--wait \(wait): give seconds above 0, at most 120") }
            }

            func run() async throws {
                let spec: DeclaredAppSpec
                do {
                    spec = try AppFile.load(file)
                } catch {
                    throw CommandFailure.badInput("\(error)")
                }
                var logger = Logger(label: "convoy.serve")
                logger.logLevel = .critical
                var embedded: EmbeddedServer?
                let supabase: SupabaseTarget
                if let target, let anonKey {
                    supabase = SupabaseTarget(url: target, anonKey: anonKey)
                } else if let keysFile {
                    supabase = try Convoy.Run.readKeys(keysFile, relativeTo: file)
                } else {
                    guard spec.serves != nil || spec.sqlFolder != nil else {
                        throw CommandFailure.badInput("\(file): names no embedded backend (backend: {embedded: …} or {sql: FOLDER}); give --target or --keys-file")
                    }
                    var configuration = ServerConfiguration(port: 0)
                    if let serves = spec.serves { configuration.app = serves }
                    spec.serve(into: &configuration)
                    let server: EmbeddedServer
                    do {
                        server = try await EmbeddedServer.start(configuration, logger: logger)
                    } catch let invalid as ServerConfiguration.Invalid {
                        throw CommandFailure.badInput(invalid.description)
                    }
                    embedded = server
                    supabase = SupabaseTarget(url: server.keys.url, anonKey: server.keys.anonKey, serviceKey: server.keys.serviceRoleKey)
                }
                let engine = try HTTPEngine()
                let steps = spec.group != nil ? await AppCheck.run(DeclaredGroupApp(spec), target: supabase, engine: engine, wait: wait)
                                               : await AppCheck.run(DeclaredApp(spec), target: supabase, engine: engine, wait: wait)
                await embedded?.stop()
                print("\(spec.name) (\(file)) against \(supabase.url)\(embedded == nil ? "" : " (embedded)"):")
                for step in steps {
                    let mark = switch step.passed { case true?: "ok         "; case false?: "FAILED     "; case nil: "not tested " }
                    print("  \(mark) \(step.name): \(step.detail)")
                }
                if steps.contains(where: { $0.passed == false }) {
                    throw CommandFailure.runtime("\(spec.name): \(steps.last?.name ?? "a step") failed")
                }
            }
        }
    }
}

extension DeclaredAppSpec {
    /// `convoy serve` for this app's own SQL folder: the folder alone (`--app migrations`) and the declared purge.
    func serve(into configuration: inout ServerConfiguration) {
        guard let sqlFolder else { return }
        configuration.app = "migrations"
        configuration.migrationsDirectory = sqlFolder
        switch retention.purge {
        case .backend: break
        case .delete(let table): (configuration.purgeTable, configuration.purgeColumn) = (table, retention.column)
        case .function(let name): configuration.purgeFunction = name
        }
    }
}
