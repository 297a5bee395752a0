/// The battery model's result for a run (summary.json's `battery`): per
/// group, the energy its devices spent while online, split radio / GPS / CPU,
/// and what that is per device-hour as mAh and % of a battery.
public struct BatteryReport: Codable, Sendable, Equatable {
    /// The battery the percentages are of, mAh.
    public var capacityMah: Double
    /// Battery voltage used to turn joules into mAh (1 mAh = 3.6 × V joules).
    public var volts: Double
    public var groups: [Group]

    public struct Group: Codable, Sendable, Equatable {
        public var name: String
        public var network: String
        public var devices: Int
        /// Device-hours observed (each device from arrival to departure).
        public var deviceHours: Double
        /// Totals over the group, joules.
        public var radioJoules: Double
        public var gpsJoules: Double
        public var cpuJoules: Double
        /// Of the radio energy, what the tail (radio on with nothing to send) took, joules.
        public var radioTailJoules: Double
        /// Per device-hour.
        public var mAhPerHour: Double
        public var percentPerHour: Double
        /// How devices of the group differ: each device's own % of battery per hour (nil: not measured).
        public var percentPerHourByDevice: Spread?
        /// Realtime reconnections by the group's devices, each paid for as a websocket upgrade (nil: older results).
        public var reconnects: Int?

        /// The spread of a per-device figure over a group's devices.
        public struct Spread: Codable, Sendable, Equatable {
            public var min: Double
            public var p50: Double
            public var p90: Double
            public var max: Double

            /// Nearest-rank percentiles of `values` (nil when empty).
            public init?(_ values: [Double]) {
                let v = values.filter(\.isFinite).sorted()
                guard !v.isEmpty else { return nil }
                func rank(_ p: Double) -> Double { v[Swift.min(v.count - 1, Swift.max(0, Int((p / 100 * Double(v.count)).rounded(.up)) - 1))] }
                (min, p50, p90, max) = (v[0], rank(50), rank(90), v[v.count - 1])
            }
        }

        public var totalJoules: Double { radioJoules + gpsJoules + cpuJoules }

        /// Average power per device, milliwatts, by component.
        public var milliwatts: (radio: Double, gps: Double, cpu: Double) {
            let s = deviceHours * 3600
            guard s > 0 else { return (0, 0, 0) }
            return (radioJoules / s * 1000, gpsJoules / s * 1000, cpuJoules / s * 1000)
        }

        public init(name: String, network: String, devices: Int, deviceHours: Double, radioJoules: Double, gpsJoules: Double,
                    cpuJoules: Double, radioTailJoules: Double, capacityMah: Double, volts: Double) {
            (self.name, self.network, self.devices, self.deviceHours) = (name, network, devices, deviceHours)
            (self.radioJoules, self.gpsJoules, self.cpuJoules, self.radioTailJoules) = (radioJoules, gpsJoules, cpuJoules, radioTailJoules)
            let joulesPerHour = deviceHours > 0 ? (radioJoules + gpsJoules + cpuJoules) / deviceHours : 0
            mAhPerHour = joulesPerHour / (3.6 * volts)
            percentPerHour = capacityMah > 0 ? mAhPerHour / capacityMah * 100 : 0
        }

        enum CodingKeys: String, CodingKey {
            case name, network, devices
            case deviceHours = "device_hours"
            case radioJoules = "radio_j"
            case gpsJoules = "gps_j"
            case cpuJoules = "cpu_j"
            case radioTailJoules = "radio_tail_j"
            case mAhPerHour = "mah_per_hour"
            case percentPerHour = "percent_per_hour"
            case percentPerHourByDevice = "percent_per_hour_by_device"
            case reconnects
        }
    }

    public init(capacityMah: Double, volts: Double, groups: [Group]) {
        (self.capacityMah, self.volts, self.groups) = (capacityMah, volts, groups)
    }

    enum CodingKeys: String, CodingKey {
        case groups, volts
        case capacityMah = "capacity_mah"
    }
}
