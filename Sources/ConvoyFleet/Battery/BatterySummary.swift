/// Battery use per device group, for summary.json: joules split radio / GPS /
/// CPU, and per device the mean rate in mAh per hour and % of battery per hour.
public struct BatterySummary: Sendable, Equatable, Codable {
    /// The battery "% per hour" is of.
    public var capacityMAh: Double
    public var groups: [Group]

    /// Joules by part.
    public struct Joules: Sendable, Equatable, Codable {
        public var radio = 0.0
        /// The part of `radio` spent in tails (connected with nothing to send).
        public var radioTail = 0.0
        public var gps = 0.0
        public var cpu = 0.0
        public var total: Double { radio + gps + cpu }

        public init() {}

        enum CodingKeys: String, CodingKey { case radio, radioTail = "radio_tail", gps, cpu, total }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            (radio, radioTail) = (try c.decode(Double.self, forKey: .radio), try c.decode(Double.self, forKey: .radioTail))
            (gps, cpu) = (try c.decode(Double.self, forKey: .gps), try c.decode(Double.self, forKey: .cpu))
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(radio, forKey: .radio)
            try c.encode(radioTail, forKey: .radioTail)
            try c.encode(gps, forKey: .gps)
            try c.encode(cpu, forKey: .cpu)
            try c.encode(total, forKey: .total)
        }
    }

    public struct Group: Sendable, Equatable, Codable {
        public var name: String
        /// The network profile, or "mixed".
        public var network: String
        public var devices: Int
        /// Device-hours observed (the sum over devices).
        public var hoursObserved: Double
        /// The whole group's joules.
        public var joules: Joules
        /// `joules` ÷ devices.
        public var meanPerDevice: Joules
        /// Per device: mAh per hour observed, and % of the battery per hour.
        public var mAhPerHour: Double
        public var percentPerHour: Double

        enum CodingKeys: String, CodingKey {
            case name, network, devices, hoursObserved = "hours_observed", joules, meanPerDevice = "mean_per_device"
            case mAhPerHour = "mah_per_hour", percentPerHour = "percent_per_hour"
        }
    }

    enum CodingKeys: String, CodingKey { case capacityMAh = "capacity_mah", groups }

    public init(capacityMAh: Double, groups: [Group]) { (self.capacityMAh, self.groups) = (capacityMAh, groups) }

    /// Sums ledgers by group, each closed at `until`; groups in order of first appearance.
    public static func aggregate(_ ledgers: some Sequence<(group: String, ledger: EnergyLedger)>, until: Double,
                                 capacityMAh: Double = 3000) -> BatterySummary {
        var builder = Builder()
        for (group, ledger) in ledgers { builder.add(group: group, ledger: ledger, until: until) }
        return builder.summary(capacityMAh: capacityMAh)
    }

    /// Adds ledgers one at a time (no array of 10,000 ledgers needed).
    public struct Builder: Sendable {
        private struct Sum: Sendable {
            var network: String
            var devices = 0
            var seconds = 0.0
            var joules = Joules()
            var mAh = 0.0
        }
        private var sums: [String: Sum] = [:]
        private var order: [String] = []

        public init() {}

        public mutating func add(group: String, ledger: EnergyLedger, until: Double) {
            let b = ledger.breakdown(until: until)
            if sums[group] == nil {
                sums[group] = Sum(network: ledger.profile.name)
                order.append(group)
            }
            sums[group]!.devices += 1
            sums[group]!.seconds += b.seconds
            sums[group]!.joules.radio += b.radio.total
            sums[group]!.joules.radioTail += b.radio.tail
            sums[group]!.joules.gps += b.gps
            sums[group]!.joules.cpu += b.cpu
            sums[group]!.mAh += BatteryUnits.milliampHours(joules: b.total, voltage: ledger.profile.battery.voltage)
            if sums[group]!.network != ledger.profile.name { sums[group]!.network = "mixed" }
        }

        public func summary(capacityMAh: Double) -> BatterySummary {
            BatterySummary(capacityMAh: capacityMAh, groups: order.map { name in
                let s = sums[name]!
                let n = Double(max(1, s.devices)), hours = s.seconds / 3600
                var mean = Joules()
                (mean.radio, mean.radioTail, mean.gps, mean.cpu) = (s.joules.radio / n, s.joules.radioTail / n, s.joules.gps / n, s.joules.cpu / n)
                let rate = hours > 0 ? s.mAh / hours : 0
                return Group(name: name, network: s.network, devices: s.devices, hoursObserved: hours, joules: s.joules,
                             meanPerDevice: mean, mAhPerHour: rate, percentPerHour: capacityMAh > 0 ? rate / capacityMAh * 100 : 0)
            })
        }
    }
}
