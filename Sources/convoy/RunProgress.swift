import ConvoyFleet
import ConvoyMetrics
import Foundation

/// `convoy run`'s live view, once a second on standard error: redrawn in
/// place on a terminal, one plain line per second otherwise (CI logs). The
/// same second's figures go to `metrics.csv`.
struct RunProgress: Sendable {
    let devices: Int
    let terminal: Bool

    /// metrics.csv's columns (`MetricsCSV`, defined once in ConvoyMetrics).
    static var columns: [String] { MetricsCSV.header }

    init(devices: Int, terminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.devices = devices
        self.terminal = terminal
    }

    func row(_ t: FleetRun.Tick) -> [String] {
        MetricsCSV.row(.init(elapsed: t.elapsed, phase: t.phase.rawValue, devicesOnline: t.devicesOnline, interval: t.interval,
                             realtimeDown: t.health.realtimeDown, retryQueued: t.health.queued))
    }

    func line(_ t: FleetRun.Tick) -> String {
        switch t.phase {
        case .onboarding: return "onboarding  signed up \(t.onboarded)/\(devices)"
        case .pairing: return "onboarding  pairing friends"
        case .waiting: return String(format: "%5.0fs waiting for --start-at", t.elapsed)
        default:
            let i = t.interval
            // A mailbox app's phones send messages, not updates: its line counts those and their latency.
            let mailbox = t.totals[.mailboxPolls] > 0
            let latency: HistogramName = mailbox ? .mailboxLatency : .e2eLatency
            let (out, received) = mailbox ? (i.counters[.mailboxSent], i.counters[.mailboxReceived]) : (i.counters[.sent], i.counters[.received])
            func ms(_ s: String) -> String { i.statistic(latency, s).map { Self.ms($0 / 1000) } ?? "–" }
            let errors = t.totals[.httpErrors] + t.totals[.decryptFailures]
            return String(format: "%5.0fs ", t.elapsed) + t.phase.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
                + "  online \(t.devicesOnline)/\(devices)"
                + (t.health.realtimeDown > 0 ? " (\(t.health.realtimeDown) off Realtime)" : "")
                + "  out \(out)/s  in \(received)/s"
                + "  e2e p50 \(ms("p50")) p99 \(ms("p99")) ms"
                + "  errors \(errors)"
                + (t.health.queued > 0 ? "  retry queue \(t.health.queued)" : "")
        }
    }

    func show(_ t: FleetRun.Tick) {
        let text = terminal ? "\r\u{1B}[K" + line(t) : line(t) + "\n"
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Ends the redrawn line so what follows starts on its own.
    func finish() {
        if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func ms(_ v: Double) -> String { v >= 100 ? String(format: "%.0f", v) : String(format: "%.1f", v) }
}
