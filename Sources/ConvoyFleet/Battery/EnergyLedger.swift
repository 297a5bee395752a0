/// One device's energy, driven by its actual events: transfers through the
/// radio state machine, GPS on-time by location mode, CPU time for crypto.
///
/// A value type of fixed size: O(1) memory and O(1) work per event, so each
/// of 10,000 device actors can keep one. Time is plain seconds from any
/// origin, injected by the caller; nothing here reads a clock.
public struct EnergyLedger: Sendable {
    public let profile: BatteryProfile
    /// When the ledger began (the radio idle from here).
    public let start: Double
    public private(set) var radio: RadioModel
    public private(set) var gpsJoules = 0.0
    public private(set) var gpsSeconds = 0.0
    public private(set) var cpuJoules = 0.0
    public private(set) var cpuSeconds = 0.0
    public private(set) var bytesUp = 0
    public private(set) var bytesDown = 0
    public private(set) var transfers = 0

    public init(profile: BatteryProfile, start: Double = 0) {
        self.profile = profile
        self.start = start
        radio = RadioModel(profile: profile.radio, start: start)
    }

    /// Bytes through the radio at `time`: an HTTP request and its response, a
    /// Realtime message received (bytesUp 0), a heartbeat and its reply.
    /// `lasting`: how long the exchange took from `time` (its round trip).
    public mutating func transfer(at time: Double, bytesUp: Int, bytesDown: Int, lasting: Double = 0) {
        radio.transfer(at: time, bytesUp: bytesUp, bytesDown: bytesDown, lasting: lasting)
        self.bytesUp &+= max(0, bytesUp)
        self.bytesDown &+= max(0, bytesDown)
        transfers &+= 1
    }

    /// The GPS in `mode` from `from` to `to` (e.g. each tick: the time since the previous tick).
    public mutating func gps(mode: LocationMode, from: Double, to: Double) {
        let seconds = max(0, to - from)
        gpsSeconds += seconds
        gpsJoules += profile.gps.averagePower(mode) * seconds
    }

    /// CPU busy for `seconds` of this machine's time (sealing, opening), scaled to the phone's.
    public mutating func cpu(seconds: Double) {
        let phone = max(0, seconds) * profile.cpu.timeScale
        cpuSeconds += phone
        cpuJoules += profile.cpu.activePower * phone
    }

    /// Everything spent from `start` to `until`, closing an open tail at `until`.
    public func breakdown(until time: Double) -> EnergyBreakdown {
        EnergyBreakdown(seconds: max(0, time - start), radio: radio.energy(until: time), gps: gpsJoules, cpu: cpuJoules)
    }
}

/// Joules split radio / GPS / CPU over a stretch of time.
public struct EnergyBreakdown: Sendable, Equatable, Codable {
    /// The time observed.
    public var seconds: Double
    public var radio: RadioEnergy
    public var gps: Double
    public var cpu: Double

    public init(seconds: Double, radio: RadioEnergy, gps: Double, cpu: Double) {
        (self.seconds, self.radio, self.gps, self.cpu) = (seconds, radio, gps, cpu)
    }

    public var total: Double { radio.total + gps + cpu }
}
