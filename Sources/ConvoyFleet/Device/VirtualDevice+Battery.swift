import ConvoyGeo
import ConvoyWire

/// The battery model's side of a device: its battery.ledger ledger is fed by what it
/// actually does while online (docs/battery.md). Times are the run's
/// monotonic seconds.
extension VirtualDevice {
    /// HTTP/1.1 request headers (apikey and bearer JWTs, content type, prefer, host) plus TCP/IP, bytes.
    static let requestOverhead = 1_100
    /// A response's status line and headers plus TCP/IP, bytes.
    static let responseOverhead = 300
    /// A Phoenix heartbeat frame and its reply, with TCP/IP headers, bytes.
    static let heartbeatBytes = (up: 60 + 58, down: 110 + 56)

    /// The GPS mode this device's sharing uses: in the background, significant change, or as in the
    /// foreground when it shares continuously.
    var locationMode: LocationMode {
        guard profile.background else { return profile.locationMode }
        return profile.backgroundMode == .continuous ? .highAccuracy : .significantChange
    }

    /// Starts the ledger as the device comes online.
    func startEnergy(at t: Double) {
        guard let model = profile.battery else { return }
        battery.ledger = EnergyLedger(profile: model, start: t)
        var draw = SeededGenerator(seed: profile.seed, stream: 0xBA77E2)
        battery.startLevel = draw.uniform(0.35, 0.95)
        // Without location permission in the background, the GPS never runs for this app.
        battery.gpsSince = profile.sharesNothing || !app.sharesLocation ? nil : t
    }

    /// An HTTP exchange: `body` bytes up with headers, `response` bytes down with headers; `since`: when it
    /// began (the radio is connected from then until now, however slow the network made the round trip).
    /// Nothing is spent while the phone's network is down: its radio sent nothing.
    func spendHTTP(body: Int, response: Int = 0, requests: Int = 1, since: Double? = nil) {
        let now = context.clock.now()
        if let link = profile.link, link.isOffline(at: ShapingProxy.now()) { return }
        let start = since.map { min($0, now) } ?? now
        battery.ledger?.transfer(at: start, bytesUp: body + requests * Self.requestOverhead, bytesDown: response + requests * Self.responseOverhead,
                                 lasting: now - start)
    }

    /// A websocket message sent (a broadcast: the frame with its mask, plus TCP/IP headers).
    func spendSent(bytes: Int) {
        if let link = profile.link, link.isOffline(at: ShapingProxy.now()) { return }
        battery.ledger?.transfer(at: context.clock.now(), bytesUp: bytes + RealtimeClient.frameOverhead + 4, bytesDown: 0)
    }

    /// A websocket message received.
    func spendReceived(bytes: Int) {
        battery.ledger?.transfer(at: context.clock.now(), bytesUp: 0, bytesDown: bytes)
    }

    func spendHeartbeat() {
        battery.ledger?.transfer(at: context.clock.now(), bytesUp: Self.heartbeatBytes.up, bytesDown: Self.heartbeatBytes.down)
    }

    func spendCPU(seconds: Double) { battery.ledger?.cpu(seconds: seconds) }

    /// The GPS stops when the device stops sharing.
    func stopGPS(at t: Double) {
        guard let since = battery.gpsSince else { return }
        battery.ledger?.gps(mode: locationMode, from: since, to: t)
        battery.gpsSince = nil
    }

    /// The level the phone's battery shows, 0…1, for an app that sends it (`{{battery.percent}}`): a level drawn per
    /// phone as it comes online (35–95 %), less what this app's model has spent since (the rest of the phone's use is
    /// not modelled); nil without a battery model.
    func batteryLevel(at now: Double) -> Double? {
        guard let (ledger, _) = energyReport(now: now) else { return nil }
        let capacity = ledger.profile.battery.capacityMAh * ledger.profile.battery.joulesPerMAh
        return max(0, battery.startLevel - ledger.breakdown(until: now).total / capacity)
    }

    /// The ledger and when it ends (the device disconnected, or `now`): nil if it never came online.
    func energyReport(now: Double) -> (ledger: EnergyLedger, until: Double)? {
        guard var ledger = battery.ledger else { return nil }
        if let since = battery.gpsSince { ledger.gps(mode: locationMode, from: since, to: now) }
        return (ledger, battery.end ?? now)
    }
}

/// The battery model's state on one phone: its ledger from arrival, when the GPS was last accounted up
/// to, and when the phone went offline.
struct BatteryState: Sendable {
    var ledger: EnergyLedger?
    /// The level it came online at (`batteryLevel`).
    var startLevel = 1.0
    var gpsSince: Double?
    var end: Double?
}
