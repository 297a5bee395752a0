/// The `convoy battery` table: what one Green Box phone spends per hour at
/// different sharing cadences, batched, and in the background, with no server.
/// Each row drives an `EnergyLedger` through an hour of the events it implies
/// (uploads, friends' updates over Realtime, heartbeats, GPS, crypto).
public enum BatteryWhatIf {
    /// What the rows assume; every byte count is a parameter (docs/battery.md).
    public struct Assumptions: Sendable, Equatable {
        /// Friends who share with this phone and whom it shares with.
        public var friends = 3
        /// One bulk insert: HTTP/2 request headers and framing (HPACK-compressed apikey and bearer JWT, TLS record).
        public var requestOverheadUp = 500
        /// One sealed row in the JSON array: sender_id, recipient_id, base64 of a ≈ 100-byte sealed payload.
        public var rowBytesUp = 270
        /// The response to a bulk insert (201, `Prefer: return=minimal`), with TLS and TCP overhead.
        public var responseDown = 300
        /// One Realtime postgres_changes frame for one row (record, columns, commit timestamp).
        public var receiptDown = 700
        /// Realtime heartbeat every this many seconds while in the foreground (realtime-js: 25 s); 0: none.
        public var heartbeatInterval = 25.0
        /// A heartbeat frame and its phx_reply, with websocket, TLS and TCP/IP overhead.
        public var heartbeatUp = 100
        public var heartbeatDown = 150
        /// crypto_box_seal and crypto_box_seal_open on this machine (DESIGN.md).
        public var sealSeconds = 60e-6
        public var openSeconds = 32e-6
        /// Batched: a fix every `batchFixInterval` s, uploaded `batchFixes` at a time.
        public var batchFixes = 4
        public var batchFixInterval = 15.0
        /// Background: significant-change uploads at most this often (iOS: 5 min), no websocket.
        public var backgroundInterval = 300.0
        /// Foreground cadences, seconds.
        public var cadences: [Double] = [3, 5, 10, 15, 30, 60]
        /// How long each row is simulated.
        public var hours = 1.0

        public init() {}

        /// Bytes up for one bulk insert of `fixes` fixes to every friend.
        public func uploadBytes(fixes: Int) -> Int { requestOverheadUp + rowBytesUp * friends * fixes }
    }

    public enum Kind: String, Sendable, Equatable {
        case foreground, batched, background
    }

    public struct Row: Sendable, Equatable {
        public var label: String
        public var kind: Kind
        /// Seconds between uploads.
        public var uploadInterval: Double
        public var breakdown: EnergyBreakdown
        public var capacityMAh: Double
        public var voltage: Double

        public var radioMilliwatts: Double { BatteryUnits.milliwatts(joules: breakdown.radio.total, seconds: breakdown.seconds) }
        public var gpsMilliwatts: Double { BatteryUnits.milliwatts(joules: breakdown.gps, seconds: breakdown.seconds) }
        public var cpuMilliwatts: Double { BatteryUnits.milliwatts(joules: breakdown.cpu, seconds: breakdown.seconds) }
        public var mAhPerHour: Double { BatteryUnits.milliampHoursPerHour(joules: breakdown.total, seconds: breakdown.seconds, voltage: voltage) }
        public var percentPerHour: Double {
            BatteryUnits.percentPerHour(joules: breakdown.total, seconds: breakdown.seconds, capacity: capacityMAh, voltage: voltage)
        }
        /// The share of radio energy spent in tails.
        public var tailShare: Double { breakdown.radio.total > 0 ? breakdown.radio.tail / breakdown.radio.total : 0 }
        /// The share of time the radio was awake (not idle).
        public var awakeShare: Double { breakdown.seconds > 0 ? 1 - breakdown.radio.idleSeconds / breakdown.seconds : 0 }
    }

    /// Every row: the foreground cadences, batched, background.
    public static func table(profile: BatteryProfile, capacityMAh: Double? = nil, assumptions a: Assumptions = Assumptions()) -> [Row] {
        let capacity = capacityMAh ?? profile.battery.capacityMAh
        func row(_ label: String, _ kind: Kind, _ interval: Double, _ b: EnergyBreakdown) -> Row {
            Row(label: label, kind: kind, uploadInterval: interval, breakdown: b, capacityMAh: capacity, voltage: profile.battery.voltage)
        }
        var rows = a.cadences.map { c in
            row("every \(format(c))", .foreground, c, foreground(profile: profile, uploadInterval: c, fixesPerUpload: 1, assumptions: a))
        }
        let batch = a.batchFixInterval * Double(a.batchFixes)
        rows.append(row("\(a.batchFixes) fixes / \(format(batch))", .batched, batch,
                        foreground(profile: profile, uploadInterval: batch, fixesPerUpload: a.batchFixes, assumptions: a)))
        rows.append(row("background", .background, a.backgroundInterval, background(profile: profile, assumptions: a)))
        return rows
    }

    /// A foreground phone for `hours`: GPS high accuracy throughout; an upload of
    /// `fixesPerUpload` fixes every `uploadInterval` s; every friend's upload of the
    /// same size received over Realtime, the friends' phases spread evenly between
    /// its own (the worst case for the radio: random phases sometimes coincide);
    /// a heartbeat every `heartbeatInterval`, half an interval out of phase.
    public static func foreground(profile: BatteryProfile, uploadInterval: Double, fixesPerUpload: Int,
                                  assumptions a: Assumptions) -> EnergyBreakdown {
        let end = a.hours * 3600
        var ledger = EnergyLedger(profile: profile, start: 0)
        var events: [(time: Double, up: Int, down: Int, cpu: Double)] = []
        let rows = a.friends * fixesPerUpload
        var t = 0.0
        while t < end {
            events.append((t, a.uploadBytes(fixes: fixesPerUpload), a.responseDown, Double(rows) * a.sealSeconds))
            for f in 0..<a.friends {
                let at = t + uploadInterval * Double(f + 1) / Double(a.friends + 1)
                if at < end { events.append((at, 0, a.receiptDown * fixesPerUpload, Double(fixesPerUpload) * a.openSeconds)) }
            }
            t += uploadInterval
        }
        if a.heartbeatInterval > 0 {
            var h = a.heartbeatInterval / 2
            while h < end {
                events.append((h, a.heartbeatUp, a.heartbeatDown, 0))
                h += a.heartbeatInterval
            }
        }
        for e in events.sorted(by: { $0.time < $1.time }) {
            ledger.transfer(at: e.time, bytesUp: e.up, bytesDown: e.down)
            ledger.cpu(seconds: e.cpu)
        }
        ledger.gps(mode: .highAccuracy, from: 0, to: end)
        return ledger.breakdown(until: end)
    }

    /// A background phone: GPS in significant-change mode, an upload of one fix
    /// every `backgroundInterval` (moving all the time: the most iOS allows), no
    /// websocket (the app is suspended), so no receipts and no heartbeats.
    public static func background(profile: BatteryProfile, assumptions a: Assumptions) -> EnergyBreakdown {
        let end = a.hours * 3600
        var ledger = EnergyLedger(profile: profile, start: 0)
        var t = 0.0
        while t < end {
            ledger.transfer(at: t, bytesUp: a.uploadBytes(fixes: 1), bytesDown: a.responseDown)
            ledger.cpu(seconds: Double(a.friends) * a.sealSeconds)
            t += a.backgroundInterval
        }
        ledger.gps(mode: .significantChange, from: 0, to: end)
        return ledger.breakdown(until: end)
    }

    static func format(_ seconds: Double) -> String {
        seconds >= 60 && seconds.truncatingRemainder(dividingBy: 60) == 0 ? "\(Int(seconds / 60)) min"
            : seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}
