import Foundation

/// The loop on `GPSDSource`'s thread: connect, read, map, deliver; on failure
/// back off (doubling, capped) and connect again.
struct GPSDReader {
    let source: GPSDSource

    func run() {
        let config = source.configuration
        var backoff = config.initialBackoff
        while source.shouldRun() {
            let connection: GPSDConnection
            do {
                connection = try GPSDConnection(config.address)
            } catch {
                source.deliver(.unreachable(reason: error.message, retryIn: backoff))
                guard pause(backoff) else { return }
                backoff = min(backoff * 2, config.maximumBackoff)
                continue
            }
            source.deliver(.connected(config.address))
            var devices: [String: Sky] = [:]
            var lastTime: [String: Double] = [:]
            do {
                while source.shouldRun() {
                    guard connection.waiting(timeout: config.pollInterval) else { continue }
                    switch try connection.read() {
                    case .sky(let device, let hdop, let satellites):
                        devices[device] = Sky(hdop: hdop, satellites: satellites)
                    case .tpv(var report):
                        backoff = config.initialBackoff
                        let sky = devices[report.device]
                        report.hdop = sky?.hdop ?? .nan
                        report.satellites = sky?.satellites
                        guard let fix = report.fix else {
                            source.deliver(.noFix(device: report.device))
                            continue
                        }
                        if lastTime[fix.device] == fix.time {
                            source.merge(fix)
                        } else {
                            lastTime[fix.device] = fix.time
                            source.deliver(.fix(fix))
                        }
                    case .other:
                        continue
                    }
                }
                return
            } catch {
                source.deliver(.disconnected(reason: error.message))
                guard pause(backoff) else { return }
                backoff = min(backoff * 2, config.maximumBackoff)
            }
        }
    }

    /// Sleeps `seconds` in slices, false as soon as the source should stop.
    private func pause(_ seconds: Double) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while true {
            guard source.shouldRun() else { return false }
            let left = end.timeIntervalSinceNow
            if left <= 0 { return true }
            Thread.sleep(forTimeInterval: min(left, source.configuration.pollInterval))
        }
    }

    private struct Sky {
        let hdop: Double
        let satellites: Int?
    }
}
