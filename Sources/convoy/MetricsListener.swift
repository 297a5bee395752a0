import ConvoyMetrics
import Foundation
import Hummingbird
import Logging

/// `convoy run --metrics-listen HOST:PORT`: the run's counters, histograms and
/// gauges in Prometheus's text format at `GET /metrics`, for as long as the run lasts.
struct MetricsListener {
    let host: String
    let port: Int

    /// `HOST:PORT`, `:PORT` (all interfaces) or `[v6]:PORT`.
    init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host.isEmpty ? "0.0.0.0" : host
        self.port = port
    }

    /// Serves until cancelled; `onReady` gets the bound port (useful with port 0).
    func run(_ exporter: PrometheusExporter, logger: Logger, onReady: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let router = Router()
        router.get("metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: exporter.exposition())))
        }
        let app = Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "convoy"),
                              onServerRunning: { channel in await onReady(channel.localAddress?.port ?? 0) }, logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }
}
