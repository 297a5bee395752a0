import ConvoyCrypto
import ConvoyMetrics
import ConvoyServer
import Foundation
import Hummingbird
import Logging

/// `convoy run --dashboard [HOST:]PORT`: the live page (`/`), its state (`/api/state`), its events once a
/// second (`/api/events`, Server-Sent Events), the fleet's map (`/api/map`, `/api/phone/N`; 204 for an app
/// that shares no locations), `/api/stop` (with `--dashboard-control` and its token) and, once the run has written it,
/// `/report.html`; and for `convoy dashboard`, a shard's
/// seconds (`/api/seconds`) and, once it has ended, its results files (`/api/results/NAME`, one of `resultFiles`).
struct DashboardServer {
    let host: String
    let port: Int

    /// `PORT` (loopback), `HOST:PORT`, `:PORT` (all interfaces) or `[v6]:PORT`.
    init?(_ text: String) {
        if let port = Int(text) {
            guard (0...65535).contains(port) else { return nil }
            (host, self.port) = ("127.0.0.1", port)
            return
        }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host.isEmpty ? "0.0.0.0" : host
        self.port = port
    }

    /// The address to print: a wildcard host is reached on loopback from this machine.
    func url(port bound: Int) -> String {
        let shown = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : (host.contains(":") ? "[\(host)]" : host)
        return "http://\(shown):\(bound)/"
    }

    /// The results files a shard's dashboard serves once its run has ended: what `convoy merge` reads.
    static let resultFiles = ["summary.json", "histograms.json", "ledger.json", "metrics.csv"]

    /// Serves until cancelled; `onReady` gets the bound port (useful with port 0). `report`: report.html once written;
    /// `map` and `phone`: the fleet map and one phone's detail (nil: none yet, or no such phone); `results`: one of
    /// `resultFiles` (nil: not written yet).
    func run(_ feed: DashboardFeed, report: @escaping @Sendable () async -> Data?, map: @escaping @Sendable () async -> FleetMapData?,
             phone: @escaping @Sendable (Int) async -> FleetMapData.PhoneDetail?, results: @escaping @Sendable (String) async -> Data? = { _ in nil },
             control: DashboardControl? = nil, logger: Logger, onReady: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let router = Router()
        // `--dashboard-control`: a stop, with the token printed at start; the run then ends as on SIGINT.
        router.post("api/stop") { request, _ -> Response in
            // A stop carries no body; the route reads none, and a large one is refused before anything else.
            if let length = request.headers[.contentLength].flatMap(Int.init), length > Self.maxStopBody {
                return Self.response(.contentTooLarge, "application/json", ByteBuffer(string: #"{"error":"a stop carries no body"}"#))
            }
            guard let control else {
                return Self.response(.notFound, "application/json", ByteBuffer(string: #"{"error":"the run was started without --dashboard-control"}"#))
            }
            guard control.authorizes(request.headers[.authorization]) else {
                return Self.response(.unauthorized, "application/json", ByteBuffer(string: #"{"error":"a stop needs the token convoy printed at start (Authorization: Bearer TOKEN)"}"#))
            }
            guard feed.end == nil else { return Self.response(.conflict, "application/json", ByteBuffer(string: #"{"error":"the run has ended"}"#)) }
            let first = control.requestStop()
            return Self.response(.accepted, "application/json", ByteBuffer(string: first ? #"{"stopping":true}"# : #"{"stopping":true,"already":true}"#))
        }
        router.get("api/results/:name") { _, context -> Response in
            guard let name = context.parameters.get("name"), Self.resultFiles.contains(name), let data = await results(name) else {
                return Self.response(.notFound, "application/json", ByteBuffer(string: #"{"error":"not written yet, or no such file"}"#))
            }
            return Self.response(.ok, name.hasSuffix(".csv") ? "text/csv; charset=utf-8" : "application/json", ByteBuffer(bytes: data))
        }
        // The map: in its compact form (FleetMapData.Compact), encoded once a second for every reader (one that asks more
        // often gets the same bytes), gzipped once for those that accept it.
        let mapBytes = DashboardBytes(compress: { try? Gzip.compress($0, level: 6) })
        router.get("api/map") { request, _ -> Response in
            guard feed.header.sharesLocations else { return Response(status: .noContent) }
            let gzip = request.headers[.acceptEncoding].map { $0.lowercased().contains("gzip") } ?? false
            let key = DashboardBytes.key(feed)
            let made: (body: [UInt8], gzip: Bool)
            if let hit = mapBytes.cached(for: key, gzip: gzip) {
                made = hit
            } else if let data = await map() {
                made = mapBytes.store(FleetMapData.Compact(data).bytes(), for: key, gzip: gzip)
            } else {
                return Self.response(.ok, "application/json", ByteBuffer(string: #"{"v":2,"groups":[],"phones":[],"tracked":[],"sampling":""}"#))
            }
            return Self.response(.ok, "application/json", ByteBuffer(bytes: made.body), gzip: made.gzip)
        }
        router.get("api/phone/:index") { _, context -> Response in
            guard let index = context.parameters.get("index", as: Int.self), let detail = await phone(index), let json = try? Self.encoder.encode(detail) else {
                return Self.response(.notFound, "application/json", ByteBuffer(string: #"{"error":"no such phone"}"#))
            }
            return Self.response(.ok, "application/json", ByteBuffer(bytes: json))
        }
        router.get("/") { _, _ -> Response in
            Self.response(.ok, "text/html; charset=utf-8", ByteBuffer(string: DashboardPage.html))
        }
        // No icon: an empty answer, not a 404 in every browser's console.
        router.get("favicon.ico") { _, _ -> Response in Response(status: .noContent) }
        router.get("api/state") { _, _ -> Response in
            Self.response(.ok, "application/json", ByteBuffer(bytes: feed.state()))
        }
        // For `convoy dashboard`: the seconds published after ?after=N (the newest minute at most), histograms included.
        router.get("api/seconds") { request, _ -> Response in
            let after = request.uri.queryParameters.get("after", as: Int.self) ?? 0
            return Self.response(.ok, "application/json", ByteBuffer(bytes: feed.seconds(after: after)))
        }
        router.get("api/events") { _, _ -> Response in
            guard let (after, events) = feed.listen(atMost: Self.maxEventStreams) else {
                var refused = Self.response(.serviceUnavailable, "application/json", ByteBuffer(string:
                    #"{"error":"\#(Self.maxEventStreams) pages are following this run already: close one, or read /api/state"}"#))
                refused.headers[.retryAfter] = "10"
                return refused
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream; charset=utf-8"
            headers[.cacheControl] = "no-store"
            // A retry hint for the browser, then each event as the run publishes it; one that fell behind is told what
            // it skipped (`event: skipped`), and after the end goes straight to it.
            let body = ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                var reader = DashboardFeed.CatchingUp(after: after)
                for await event in events {
                    if let text = reader.text(for: event, ended: feed.end != nil) { try await writer.write(ByteBuffer(string: text)) }
                }
                try await writer.finish(nil)
            }
            return Response(status: .ok, headers: headers, body: body)
        }
        router.get("report.html") { _, _ -> Response in
            guard let data = await report() else {
                return Self.response(.notFound, "text/plain; charset=utf-8",
                                     ByteBuffer(string: "report.html is written when the run ends: not yet\n"))
            }
            return Self.response(.ok, "text/html; charset=utf-8", ByteBuffer(bytes: data))
        }
        // `convoy serve`'s limits: `--dashboard :PORT` listens on every interface, with no login.
        let app = Application(router: router, server: GuardedServer.http(),
                              configuration: .init(address: .hostname(host, port: port), serverName: "convoy"),
                              onServerRunning: { channel in
                                  await GuardedServer.pauseAcceptingWhenOutOfDescriptors(channel, logger: logger)
                                  await onReady(channel.localAddress?.port ?? 0)
                              }, logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }

    static let encoder = JSONEncoder()

    /// Pages following the run at once (`/api/events`); one more is answered 503 with Retry-After. Each holds a
    /// connection and a few seconds' events; the page falls back to reconnecting, as after any lost stream.
    static let maxEventStreams = 64
    /// Bytes a stop's body may declare (it needs none).
    static let maxStopBody = 1024

    /// `gzip`: the body is gzipped, and chosen by the request's Accept-Encoding (nil: a body that never is).
    private static func response(_ status: HTTPResponse.Status, _ type: String, _ body: ByteBuffer, gzip: Bool? = nil) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = "no-store"
        if let gzip {
            headers[.vary] = "Accept-Encoding"
            if gzip { headers[.contentEncoding] = "gzip" }
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }
}
