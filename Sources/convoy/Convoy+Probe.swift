import ArgumentParser
import ConvoyFleet
import ConvoyMetrics
import ConvoyWire
import Foundation
import Logging

extension Convoy {
    /// `convoy probe CATALOGUE`: one hostile device's pass, without a fleet.
    struct Probe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a probe catalogue against a backend as a hostile device, without a load.",
            discussion: """
                Signs up four accounts (attacker, friend, victim, stranger; the friend pairs with the attacker \
                and the victim, as the app pairs; a catalogue with `cast: gotrue` gets bare GoTrue accounts and \
                makes the rest in its setup; by default again for each probe that writes, --isolation), runs every \
                probe of the catalogue (docs/probes.md) and prints tried, \
                denied, leaked and findings per probe, what each measured (a rate limit found, a brute-force \
                estimate, two answers compared), with the request and response of each leak and finding \
                (tokens redacted). With --out, writes probes.json and junit.xml there. \
                Exit: 0 nothing leaked, 99 a probe leaked, 2 a bad catalogue or flags, 1 the backend failed.
                """)

        @Argument(help: "A probe catalogue (e.g. probes/greenbox.yaml, probes/naarscars.yaml, probes/supabase-auth.yaml).")
        var catalogue: String

        @Option(help: "The backend's URL (a Supabase project or convoy serve).")
        var target: String?

        @Option(name: .customLong("anon-key"), help: "Its anon key.")
        var anonKey: String?

        @Option(name: .customLong("service-key"), help: "Its service_role key: lets probes check after the fact (e.g. that a key was not replaced).")
        var serviceKey: String?

        @Option(name: .customLong("keys-file"), help: "What `convoy serve --keys-file` wrote: {url, anon_key, service_role_key}.")
        var keysFile: String?

        @Option(help: "A folder for probes.json and junit.xml.")
        var out: String?

        @Option(help: "The app whose backend it is, for how its probe cast pairs (\(Apps.names.joined(separator: ", ")), or an app declared in a file (a .yaml path, docs/apps.md); by default the catalogue's, when its name is an app's, else \(Apps.defaultName)).")
        var app: String?

        @Option(name: .customLong("join-timeout"), help: "Seconds a Realtime or channel probe waits for its join's reply; without one the probe is inconclusive.")
        var joinTimeout: Double = 10

        @Option(name: .customLong("mode"), help: "One of the app's modes as a scenario sets it, KEY=VALUE (greenbox: pairing=prd for a project without invite codes).")
        var modes: [String] = []

        enum Isolation: String, ExpressibleByArgument, CaseIterable { case fresh, shared }

        @Option(help: """
            How each probe finds the backend: fresh (the default): each probe that writes gets four accounts of its own, \
            set up as the catalogue declares, and the probes that only read share a cast none writes through; shared: one \
            cast for every probe, in order (four sign-ups in all, for a project whose sign-up limit allows no more; a probe \
            then runs on what the ones before it wrote, and its report says so).
            """)
        var isolation: Isolation = .fresh

        /// The app with the modes given, as a scenario's `app:` would choose it; without --app,
        /// the one `catalogue` is named after (probes/survale.yaml is `catalogue: survale`).
        func chosenApp(for catalogue: ProbeCatalogue) throws -> any AppProfile {
            if let file = self.app, file.hasSuffix(".yaml") || file.hasSuffix(".yml") {
                guard modes.isEmpty else { throw CommandFailure.badInput("--mode is for a built-in app's modes; a declared app's file says everything") }
                do {
                    let spec = try AppFile.load(file)
                    return spec.group != nil ? DeclaredGroupApp(spec) : DeclaredApp(spec)
                } catch {
                    throw CommandFailure.badInput("\(error)")
                }
            }
            let app = self.app ?? (Apps.names.contains(catalogue.name) ? catalogue.name : Apps.defaultName)
            guard let modes = Apps.modes(of: app) else {
                throw CommandFailure.badInput("no app \"\(app)\" (apps: \(Apps.names.joined(separator: ", ")))")
            }
            var options: [String: String] = [:]
            for pair in self.modes {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let values = modes.first(where: { $0.option == parts[0] })?.values else {
                    throw CommandFailure.badInput("--mode \(pair): \(app)'s modes are \(modes.map { "\($0.option)=\($0.values.joined(separator: "|"))" }.joined(separator: ", "))")
                }
                guard values.contains(parts[1]) else {
                    throw CommandFailure.badInput("--mode \(pair): \(app) has no \(parts[0]) \"\(parts[1])\" (\(parts[0]): \(values.joined(separator: ", ")))")
                }
                options[parts[0]] = parts[1]
            }
            return Apps.make(app, options: AppOptions(options))!
        }

        func validate() throws {
            if keysFile == nil, target == nil { throw ValidationError("give --keys-file, or --target with --anon-key") }
            if keysFile != nil, target != nil { throw ValidationError("give --keys-file or --target, not both") }
            if target != nil, anonKey == nil { throw ValidationError("--target needs --anon-key") }
            if let target, let problem = TargetURL.problem(target) { throw ValidationError(problem) }
            if !(joinTimeout > 0 && joinTimeout <= 600) { throw ValidationError("--join-timeout \(joinTimeout): give seconds above 0, at most 600") }
        }

        func run() async throws {
            let loaded: ProbeCatalogue
            do {
                loaded = try ProbeCatalogueFile.load(catalogue)
            } catch {
                throw CommandFailure.badInput(error.description)
            }
            let profile = try chosenApp(for: loaded)
            let backend: SupabaseTarget
            if let keysFile {
                backend = try Run.readKeys(keysFile, relativeTo: nil)
            } else {
                backend = SupabaseTarget(url: target!, anonKey: anonKey!, serviceKey: serviceKey)
            }
            let engine: HTTPEngine
            do {
                engine = try HTTPEngine()
            } catch {
                throw CommandFailure.runtime("\(error)")
            }
            defer { engine.shutdown() }
            var logger = Logger(label: "convoy.probe")
            logger.logLevel = .critical
            var runner = ProbeRunner(target: backend, engine: engine, logger: logger, app: profile)
            runner.joinTimeout = joinTimeout
            let started = Date()
            let cast: (attacker: ProbeParty, victims: ProbeVictims)
            do {
                cast = try await runner.prepare(cast: loaded.cast)
            } catch {
                throw CommandFailure.runtime("cannot sign up the probe accounts at \(backend.url): \(error)")
            }
            let fresh: (@Sendable () async throws -> ProbeRunner.Cast)?
            switch isolation {
            case .fresh: fresh = { [runner] in try await runner.prepare(cast: loaded.cast) }
            case .shared: fresh = nil
            }
            let outcomes = await runner.run(loaded, attacker: cast.attacker, victims: cast.victims, freshCast: fresh)
            let summary = ProbeSummary(outcomes: outcomes, catalogue: loaded, file: catalogue, hostileDevices: 1)
            print(Self.table(summary, name: loaded.name, target: backend.url))
            if let out {
                do {
                    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                    try encoder.encode(summary).write(to: URL(fileURLWithPath: out + "/probes.json"))
                    try Data(JUnitReport.render(probes: summary, name: loaded.name, seconds: Date().timeIntervalSince(started), started: started).utf8)
                        .write(to: URL(fileURLWithPath: out + "/junit.xml"))
                } catch {
                    throw CommandFailure.runtime("cannot write \(out): \(error.localizedDescription)")
                }
            }
            if summary.leaks > 0 {
                throw CommandFailure(status: .thresholdsFailed, message: "\(summary.leaks) probe check(s) leaked")
            }
        }

        static func table(_ s: ProbeSummary, name: String, target: String) -> String {
            var out = "\(name) against \(target): \(s.probes.count) probes, \(s.tried) checks, "
            out += s.leaks > 0 ? "\(s.leaks) LEAKED" : "none leaked"
            out += ", \(s.findings) findings\n\n"
            let width = max(10, s.probes.map(\.id.count).max() ?? 0)
            out += "probe".padding(toLength: width, withPad: " ", startingAt: 0) + "  category          tried denied leaked findings\n"
            for p in s.probes {
                out += p.id.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + p.category.padding(toLength: 16, withPad: " ", startingAt: 0)
                out += String(format: "  %5d %6d %6d %8d", p.tried, p.denied, p.leaked, p.findings)
                out += p.leaked > 0 ? "  LEAK" : p.errors > 0 ? "  inconclusive" : ""
                out += "\n"
            }
            for p in s.probes where p.errors > 0 && !(p.notes ?? []).isEmpty {
                out += "\n\(p.id): " + p.notes!.joined(separator: "\n  ") + "\n"
            }
            for p in s.probes where !(p.measurements ?? []).isEmpty {
                out += "\n\(p.id)\(p.section.map { " (\($0))" } ?? ""):\n" + p.measurements!.map { "  \($0)\n" }.joined()
            }
            for p in s.probes where p.leaked > 0 || p.findings > 0 {
                for e in p.evidence.prefix(1) {
                    out += "\n\(e.kind == "leak" ? "LEAK" : "finding") \(p.id)\(p.section.map { " (\($0))" } ?? ""): \(e.note)\n"
                    if let state = p.state { out += "  ran on \(state)\n" }
                    out += "  \(e.request.replacingOccurrences(of: "\n", with: "\n  "))\n  → \(e.status) \(e.response.prefix(300))\n"
                }
            }
            return out
        }
    }
}
