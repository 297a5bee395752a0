/// Everything the energy model needs for one phone on one network: its radio,
/// its GPS by location mode, its CPU, its battery. Read from
/// `BatteryProfiles.yaml` (the shipped numbers, each with its source) or a
/// user's file of the same shape; see docs/battery.md.
public struct BatteryProfile: Sendable, Equatable {
    /// The network's name in the profiles file (`lte`, `3g`, `wifi`, …).
    public var name: String
    public var radio: RadioProfile
    public var gps: GPSProfile
    public var cpu: CPUProfile
    public var battery: BatteryCell

    public init(name: String, radio: RadioProfile, gps: GPSProfile, cpu: CPUProfile, battery: BatteryCell) {
        (self.name, self.radio, self.gps, self.cpu, self.battery) = (name, radio, gps, cpu, battery)
    }
}

/// A phone battery: its voltage turns joules into mAh.
public struct BatteryCell: Sendable, Equatable {
    public var voltage: Double
    /// The default capacity for "% of battery per hour".
    public var capacityMAh: Double

    public init(voltage: Double = 3.85, capacityMAh: Double = 3000) {
        (self.voltage, self.capacityMAh) = (voltage, capacityMAh)
    }

    /// Joules in one mAh: V × 3.6 (13.86 J at 3.85 V).
    public var joulesPerMAh: Double { voltage * 3.6 }
}

/// How a phone asks for locations; each has its own GPS duty cycle.
public enum LocationMode: String, Sendable, Equatable, CaseIterable, Codable {
    /// The receiver on the whole time (foreground "Live").
    case highAccuracy = "high_accuracy"
    /// Mostly Wi-Fi and cell positioning.
    case balanced
    /// iOS significant-change service (background "Energy Saver").
    case significantChange = "significant_change"
}

/// GPS power per location mode: average power = `power × duty`.
public struct GPSProfile: Sendable, Equatable {
    public struct Mode: Sendable, Equatable {
        public var power: Double
        public var duty: Double
        public init(power: Double, duty: Double) { (self.power, self.duty) = (power, duty) }
        /// Average watts while this mode is on.
        public var averagePower: Double { power * duty }
    }

    public var modes: [LocationMode: Mode]

    public init(modes: [LocationMode: Mode]) { self.modes = modes }

    /// Average watts in `mode` (0 for a mode the profile does not give).
    public func averagePower(_ mode: LocationMode) -> Double { modes[mode]?.averagePower ?? 0 }
}

/// CPU power while crypto runs.
public struct CPUProfile: Sendable, Equatable {
    /// Watts while a core is busy.
    public var activePower: Double
    /// Phone CPU seconds per harness CPU second.
    public var timeScale: Double

    public init(activePower: Double, timeScale: Double = 1) { (self.activePower, self.timeScale) = (activePower, timeScale) }
}

/// A radio's RRC state machine: promotion from idle, transfer power, a tail of
/// one or more stages (LTE: one; 3G: DCH then FACH), idle power.
public struct RadioProfile: Sendable, Equatable {
    /// A timed step at one power (promotion).
    public struct Step: Sendable, Equatable {
        public var seconds: Double
        public var power: Double
        public init(seconds: Double, power: Double) { (self.seconds, self.power) = (seconds, power) }
        public var joules: Double { seconds * power }
    }

    /// One tail stage: after `seconds` without traffic the radio demotes to the next (or to idle).
    public struct TailStage: Sendable, Equatable {
        public var name: String
        public var seconds: Double
        public var power: Double
        /// What going back to full speed from this stage costs (3G FACH → DCH); nil: nothing.
        public var promotion: Step?
        /// Transfers up to these sizes stay in this stage (3G FACH's RLC thresholds); nil: none do.
        public var smallTransfer: (up: Int, down: Int)?

        public init(name: String, seconds: Double, power: Double, promotion: Step? = nil, smallTransfer: (up: Int, down: Int)? = nil) {
            (self.name, self.seconds, self.power, self.promotion, self.smallTransfer) = (name, seconds, power, promotion, smallTransfer)
        }

        public static func == (a: TailStage, b: TailStage) -> Bool {
            a.name == b.name && a.seconds == b.seconds && a.power == b.power && a.promotion == b.promotion
                && a.smallTransfer?.up == b.smallTransfer?.up && a.smallTransfer?.down == b.smallTransfer?.down
        }
    }

    public var uplinkMbps: Double
    public var downlinkMbps: Double
    public var promotion: Step
    /// Watts per Mbit/s up and down, and the base while transferring (Huang: P = αu·tu + αd·td + β).
    public var alphaUp: Double
    public var alphaDown: Double
    public var beta: Double
    public var tail: [TailStage]
    public var idlePower: Double

    public init(uplinkMbps: Double, downlinkMbps: Double, promotion: Step, alphaUp: Double, alphaDown: Double, beta: Double,
                tail: [TailStage], idlePower: Double) {
        (self.uplinkMbps, self.downlinkMbps, self.promotion) = (uplinkMbps, downlinkMbps, promotion)
        (self.alphaUp, self.alphaDown, self.beta, self.tail, self.idlePower) = (alphaUp, alphaDown, beta, tail, idlePower)
    }

    /// Seconds on the air: bytes × 8 at the profile's throughput, up then down.
    public func transferSeconds(up: Int, down: Int) -> Double {
        Double(up) * 8 / (uplinkMbps * 1e6) + Double(down) * 8 / (downlinkMbps * 1e6)
    }

    /// Joules for a transfer at full speed: β over its duration, plus α per megabit
    /// (α × Mbit/s × seconds = α × Mbit).
    public func transferJoules(up: Int, down: Int) -> Double {
        beta * transferSeconds(up: up, down: down) + alphaUp * Double(up) * 8 / 1e6 + alphaDown * Double(down) * 8 / 1e6
    }

    /// The whole tail's length in seconds from stage `from`.
    func tailSeconds(from stage: Int) -> Double { tail[stage...].reduce(0) { $0 + $1.seconds } }
}
