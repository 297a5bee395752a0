import ConvoyMetrics
import ConvoyServer
import Foundation
import Hummingbird
import Logging

/// `convoy run --metrics-listen [HOST:]PORT`: the run's counters, histograms and
/// gauges in Prometheus's text format at `GET /metrics`, for as long as the run lasts.
struct MetricsListener {
    let host: String
    let port: Int

    /// `PORT` (loopback), `HOST:PORT`, `:PORT` (all interfaces) or `[v6]:PORT`: as `--dashboard` reads it.
    init?(_ text: String) {
        guard let address = DashboardServer(text) else { return nil }
        (host, port) = (address.host, address.port)
    }

    /// Serves until cancelled; `onReady` gets the bound port (useful with port 0).
    func run(_ exporter: PrometheusExporter, logger: Logger, onReady: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let router = Router()
        router.get("metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: exporter.exposition())))
        }
        // `convoy serve`'s limits, as the dashboard's: `:PORT` listens on every interface.
        let app = Application(router: router, server: GuardedServer.http(), configuration: .init(address: .hostname(host, port: port), serverName: "convoy"),
                              onServerRunning: { channel in
                                  await GuardedServer.pauseAcceptingWhenOutOfDescriptors(channel, logger: logger)
                                  await onReady(channel.localAddress?.port ?? 0)
                              }, logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }
}
