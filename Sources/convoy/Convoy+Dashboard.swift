import ArgumentParser
import ConvoyMetrics
import ConvoyWire
import Foundation
import Logging
import Synchronization

extension Convoy {
    /// `convoy dashboard SHARD_URL…`: one live view of a sharded run, from its shards' own dashboards.
    struct Dashboard: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One live dashboard of a sharded run, from its shards' dashboards (convoy run --shard I/N --dashboard …).",
            discussion: """
                Each SHARD_URL is one shard's dashboard (http://host:port/). Once a second this reads what each shard \
                published since (its seconds, with their histograms) and merges them as convoy merge does: histograms \
                add losslessly (the p50 and p99 shown are of every shard's recordings), counts, phones and groups sum, \
                the phase is the least advanced shard's; the thresholds are judged on the merged figures. The map shows \
                every shard's phones; a click on one asks every shard for what its friends received. A shard counts \
                as sent what it sealed to friends on its own shard and, apart, to friends on others: live, both are \
                shown as sent. When every shard has ended, this reads each shard's results (summary.json, \
                histograms.json, ledger.json, metrics.csv, from its dashboard) and merges them as convoy merge does, \
                into --out: the page shows the merged run's accounting (delivery across shards reconciled), its \
                thresholds judged on the merged figures, its exit code and its report, with each shard's verdict. If a \
                shard's results cannot be read or merged, it says why and shows the shards' ends summed instead (a \
                threshold then passes when it passed on every shard). docs/distributed.md.

                Exit codes: the merged run's (0 passed, 99 thresholds failed); 1 a shard failed or could not be \
                reached, 2 bad input.
                """)

        @Argument(help: "The shards' dashboards, e.g. http://10.0.0.2:8089/.")
        var shards: [String]

        @Option(help: ArgumentHelp("Where this dashboard listens: [HOST:]PORT (a bare port: loopback only; :PORT: every interface).",
                                   valueName: "[host:]port"))
        var listen = "8090"

        @Option(help: ArgumentHelp("After every shard has ended, stay up this long (Ctrl-C ends it sooner).", valueName: "duration"))
        var linger: DurationArgument = DurationArgument(argument: "0s")!

        @Option(help: ArgumentHelp("How long a shard may stay unreachable before this gives up on it.", valueName: "duration"))
        var patience: DurationArgument = DurationArgument(argument: "60s")!

        @Option(help: ArgumentHelp("Where the merged results go when every shard has ended (as convoy merge --out; default: a new folder "
                                   + "in the temporary directory, printed).", valueName: "dir"))
        var out: String?

        func validate() throws {
            guard DashboardServer(listen) != nil else { throw ValidationError("--listen is [HOST:]PORT, e.g. 8090 or :8090") }
            for s in shards {
                guard let u = URL(string: s), ["http", "https"].contains(u.scheme ?? ""), u.host != nil else {
                    throw ValidationError("\(s): not a shard's dashboard URL (http://host:port/)")
                }
            }
            guard Set(shards.map(Self.base)).count == shards.count else { throw ValidationError("a shard is named twice") }
        }

        static func base(_ url: String) -> String { url.hasSuffix("/") ? url : url + "/" }

        func run() async throws {
            let logger = Logger(label: "convoy.dashboard")
            let urls = shards.map(Self.base)
            let engine: HTTPEngine
            do { engine = try HTTPEngine() } catch { throw CommandFailure.runtime("\(error)") }
            defer { engine.shutdown() }
            let client = ShardClient(engine: engine, timeout: 5)
            // Every shard's header first (its dashboard is up before its phones sign up).
            var headers: [DashboardFeed.Header] = []
            for url in urls {
                switch await client.waitForHeader(url, patience: patience.seconds) {
                case .success(let h): headers.append(h)
                case .failure(let f): throw CommandFailure.runtime("\(url): no shard's dashboard within \(Format.duration(patience.seconds)): \(f)")
                }
            }
            let header = DashboardMerge.header(headers, shards: urls)
            let thresholds = header.thresholds.compactMap { try? Threshold($0) }
            let feed = DashboardFeed(header, thresholds: thresholds)
            let server = DashboardServer(listen)!
            let (ready, signal) = AsyncStream<Int>.makeStream()
            // The merged run's report, once the shards have ended and their results merged.
            let report = Mutex<String?>(nil)
            let serving = Task {
                try? await server.run(feed, report: { report.withLock { $0 }.flatMap { FileManager.default.contents(atPath: $0) } }, map: { await DashboardMerge.map(client.all(urls, "api/map", as: FleetMapData.Compact.self).map(\.map)) },
                                      phone: { i in await DashboardMerge.detail(client.all(urls, "api/phone/\(i)", as: FleetMapData.PhoneDetail.self)) },
                                      results: { name in
                                          report.withLock { $0 }.flatMap { FileManager.default.contents(atPath: (($0 as NSString).deletingLastPathComponent as NSString).appendingPathComponent(name)) }
                                      },
                                      logger: logger) { port in signal.yield(port) }
                signal.finish()
            }
            defer { serving.cancel() }
            var it = ready.makeAsyncIterator()
            guard let port = await it.next() else { throw CommandFailure.runtime("--listen \(listen): cannot listen") }
            FileHandle.standardError.write(Data("convoy: dashboard of \(urls.count) shards at \(server.url(port: port))\n".utf8))

            var end = await follow(urls, client: client, feed: feed, logger: logger)
            if let merged = await mergedEnd(urls, client: client, summed: end, logger: logger) {
                report.withLock { $0 = (merged.results as NSString).appendingPathComponent("report.html") }
                end = merged
                FileHandle.standardError.write(Data("convoy: the shards' results merged into \(merged.results)\n".utf8))
            }
            feed.finish(end)
            FileHandle.standardError.write(Data("convoy: every shard has ended: exit \(end.exitCode) (\(end.shards?.map { "\($0.url) \($0.exitCode)" }.joined(separator: ", ") ?? ""))\n".utf8))
            if linger.seconds > 0 { try? await Task.sleep(for: .seconds(linger.seconds)) }
            if end.exitCode != 0 {
                throw CommandFailure(status: ExitStatus(rawValue: Int32(end.exitCode)) ?? .runtimeFailure, message: "a shard did not pass")
            }
        }

        /// Merges the shards' seconds once a second until every shard has ended (or stopped answering).
        func follow(_ urls: [String], client: ShardClient, feed: DashboardFeed, logger: Logger) async -> DashboardEnd {
            var after = Array(repeating: 0, count: urls.count)
            var latest: [DashboardFeed.Second?] = Array(repeating: nil, count: urls.count)
            var ends: [DashboardEnd?] = Array(repeating: nil, count: urls.count)
            var silentSince: [Double?] = Array(repeating: nil, count: urls.count)
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                var new: [DashboardFeed.Second] = []
                for (k, url) in urls.enumerated() where ends[k] == nil {
                    let now = Date().timeIntervalSince1970
                    let seconds: [DashboardFeed.Second]
                    switch await client.fetch(url + "api/seconds?after=\(after[k])", as: [DashboardFeed.Second].self) {
                    case .success(let s): seconds = s
                    case .failure(let failure):
                        // Said once while it lasts; after `patience` the shard is given up on, with why.
                        if silentSince[k] == nil {
                            silentSince[k] = now
                            logger.warning("\(url)api/seconds: \(failure); trying again each second for \(Format.duration(patience.seconds))")
                        }
                        if now - silentSince[k]! > patience.seconds {
                            ends[k] = DashboardMerge.unreachable(url, why: "\(failure)")
                            FileHandle.standardError.write(Data("convoy: \(url)api/seconds: \(failure): nothing better for \(Format.duration(patience.seconds)), so that shard counts as failed\n".utf8))
                        }
                        continue
                    }
                    silentSince[k] = nil
                    new += seconds
                    if let last = seconds.last {
                        after[k] = last.seq
                        latest[k] = last
                    } else if let state = await client.get(url + "api/state", as: ShardState.self), let end = state.end {
                        ends[k] = end
                    }
                }
                let known = zip(urls, latest).compactMap { url, s in s.map { (url, $0) } }
                if !known.isEmpty { feed.publish(DashboardMerge.second(latest: known.map(\.1), new: new, names: known.map(\.0))) }
                if ends.allSatisfy({ $0 != nil }) { return DashboardMerge.end(ends.map { $0! }, shards: urls) }
            }
            return DashboardMerge.end(ends.map { $0 ?? DashboardMerge.unreachable("") }, shards: urls)
        }

        /// How the run ended, as `convoy merge` makes it of the shards' results (read from their dashboards): the merged
        /// accounting, thresholds judged on the merged figures, the merged report, each shard's verdict; nil (the shards'
        /// ends summed instead, and why in the log) when a shard did not end or its results cannot be read or merged.
        func mergedEnd(_ urls: [String], client: ShardClient, summed: DashboardEnd, logger: Logger) async -> DashboardEnd? {
            guard let shards = summed.shards, shards.allSatisfy({ $0.exitCode != 1 }) else {
                logger.warning("a shard failed or stopped answering: the view sums the shards' ends instead of merging their results")
                return nil
            }
            let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("convoy-dashboard-\(UUID().uuidString.prefix(8).lowercased())")
            var folders: [String] = []
            for (k, url) in urls.enumerated() {
                let folder = base.appendingPathComponent("shard-\(k + 1)")
                do {
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    for name in DashboardServer.resultFiles {
                        let data: Data
                        switch await client.fetchData(url + "api/results/" + name) {
                        case .success(let d): data = d
                        case .failure where name == "metrics.csv": continue
                        case .failure(let failure):
                            logger.warning("\(url)api/results/\(name): \(failure): the view sums the shards' ends instead of merging their results")
                            return nil
                        }
                        try data.write(to: folder.appendingPathComponent(name))
                    }
                } catch {
                    logger.warning("\(folder.path): \(error): the view sums the shards' ends instead of merging their results")
                    return nil
                }
                folders.append(folder.path)
            }
            let into = out ?? base.appendingPathComponent("merged").path
            do {
                var end = DashboardEnd(try Convoy.Merge.merge(folders, into: into), report: "report.html", results: into)
                end.shards = shards
                return end
            } catch {
                logger.warning("the shards' results did not merge (\(error)): the view sums their ends instead")
                return nil
            }
        }

        struct ShardState: Decodable {
            var header: DashboardFeed.Header
            var end: DashboardEnd?
        }
    }

    /// What `convoy dashboard` asks the shards' dashboards (through Convoy's own libcurl engine). A shard's answers are
    /// not trusted: each request is bounded in time and size, and an answer that is not what a shard's dashboard sends
    /// is a failure that says so (`Failure`), never a crash or unbounded memory.
    struct ShardClient: Sendable {
        let engine: HTTPEngine
        let timeout: Double
        /// The most bytes one answer may have: a shard's newest minute of seconds, every histogram's buckets included, is
        /// a few megabytes at 10,000 phones; its results files (ledger.json) at most tens.
        var maxAnswer = 256 << 20

        /// Why a shard's answer could not be used.
        enum Failure: Error, CustomStringConvertible, Equatable {
            /// No answer: refused, reset, timed out, or larger than `maxAnswer`.
            case unreachable(String)
            /// An answer other than 200.
            case status(Int)
            /// A 200 whose body is not the JSON asked for.
            case malformed(String)

            var description: String {
                switch self {
                case .unreachable(let why): "no answer (\(why))"
                case .status(let code): "HTTP \(code)"
                case .malformed(let why): "an answer that is not a shard's dashboard's JSON (\(why))"
                }
            }
        }

        func fetch<T: Decodable>(_ url: String, as type: T.Type) async -> Result<T, Failure> {
            switch await fetchData(url) {
            case .failure(let f): return .failure(f)
            case .success(let data):
                do { return .success(try JSONDecoder().decode(T.self, from: data)) } catch {
                    return .failure(.malformed(Self.reason(error)))
                }
            }
        }

        func get<T: Decodable>(_ url: String, as type: T.Type) async -> T? { try? await fetch(url, as: T.self).get() }

        /// The body of a 200 answer.
        func fetchData(_ url: String) async -> Result<Data, Failure> {
            let response: HTTPResponse
            do { response = try await engine.send(HTTPRequest(url: url, timeout: timeout, maxBodyBytes: maxAnswer)) } catch {
                return .failure(.unreachable("\(error)"))
            }
            guard response.status == 200 else { return .failure(.status(response.status)) }
            return .success(Data(response.body))
        }

        /// A decoding error in a line: what was expected where (`seconds[3].histograms`).
        static func reason(_ error: any Error) -> String {
            func path(_ context: DecodingError.Context) -> String {
                let p = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
                return (p.isEmpty ? "" : "at \(p.hasPrefix(".") ? String(p.dropFirst()) : p): ") + context.debugDescription
            }
            switch error as? DecodingError {
            case .dataCorrupted(let c)?: return path(c)
            case .keyNotFound(let key, let c)?: return path(c) + " (no \(key.stringValue))"
            case .typeMismatch(_, let c)?, .valueNotFound(_, let c)?: return path(c)
            default: return "\(error)"
            }
        }

        /// `path` from every shard that answers.
        func all<T: Decodable & Sendable>(_ urls: [String], _ path: String, as type: T.Type) async -> [T] {
            await withTaskGroup(of: T?.self) { group in
                for url in urls { group.addTask { await get(url + path, as: T.self) } }
                var out: [T] = []
                for await r in group { if let r { out.append(r) } }
                return out
            }
        }

        /// The shard's header, asked for once a second until `patience` has passed (then the last failure).
        func waitForHeader(_ url: String, patience: Double) async -> Result<DashboardFeed.Header, Failure> {
            let deadline = Date().addingTimeInterval(patience)
            var last = Failure.unreachable("not asked")
            while Date() < deadline {
                switch await fetch(url + "api/state", as: Dashboard.ShardState.self) {
                case .success(let state): return .success(state.header)
                case .failure(let f): last = f
                }
                try? await Task.sleep(for: .seconds(1))
            }
            return .failure(last)
        }
    }
}
