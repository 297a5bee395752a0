import ConvoyFleet
import Foundation
import Testing

/// The energy model against cases worked by hand from the shipped profiles
/// (Sources/ConvoyFleet/Battery/BatteryProfiles.yaml). The arithmetic is in the comments.
@Suite struct BatteryTests {
    static let profiles: BatteryProfiles = try! BatteryProfiles.shipped()
    static let lte = profiles.profile("lte")!
    static let threeG = profiles.profile("3g")!
    static let wifi = profiles.profile("wifi")!

    /// A Green Box bulk insert to 3 friends: 1,300 B up, 300 B of response down.
    static let (up, down) = (1300, 300)

    func close(_ a: Double, _ b: Double, _ tolerance: Double = 1e-6) -> Bool { abs(a - b) <= tolerance }

    @Test func theShippedFileHasTheThreeNetworksAndTheirNumbers() {
        #expect(Self.profiles.networkNames == ["lte", "3g", "wifi"])
        #expect(Self.lte.radio.promotion == RadioProfile.Step(seconds: 0.2601, power: 1.2107))
        #expect(Self.lte.radio.tail.map(\.seconds) == [11.576] && Self.lte.radio.alphaUp == 0.43839)
        #expect(Self.threeG.radio.tail.map(\.name) == ["dch", "fach"] && Self.threeG.radio.tail.map(\.power) == [0.7, 0.35])
        #expect(Self.lte.battery.voltage == 3.85 && Self.lte.battery.capacityMAh == 3000)
        #expect(Self.lte.gps.modes[.highAccuracy] == GPSProfile.Mode(power: 0.32, duty: 1))
    }

    /// One upload at t = 100 s, ledger from 0 to 200 s:
    ///   idle before       100 s × 0.02005 W                                  = 2.005 J
    ///   promotion         0.2601 s × 1.2107 W                                = 0.31490307 J
    ///   transfer time     1300·8/6e6 + 300·8/13e6 = 0.0017333… + 0.000184615… = 0.00191795 s
    ///   transfer energy   1.28804 × 0.00191795 + 0.43839 × 0.0104 + 0.05197 × 0.0024
    ///                     = 0.00247040 + 0.00455926 + 0.00012473            = 0.00715439 J
    ///   tail              11.576 s × 1.0755 W                                = 12.449988 J
    ///   idle after        200 − (100 + 0.2601 + 0.00191795 + 11.576) = 88.16198205 s × 0.02005 = 1.76764774 J
    @Test func oneIsolatedUploadOnLTEIsPromotionPlusTransferPlusTail() {
        var ledger = EnergyLedger(profile: Self.lte, start: 0)
        ledger.transfer(at: 100, bytesUp: Self.up, bytesDown: Self.down)
        let r = ledger.breakdown(until: 200).radio
        #expect(close(r.promotion, 0.31490307))
        #expect(close(r.transfer, 0.00715439))
        #expect(close(r.tail, 12.449988))
        #expect(close(r.idle, 2.005 + 1.76764774))
        #expect(close(r.total, 16.54469320))
        #expect(close(r.idleSeconds, 188.16198205))
        // Halfway through the tail the radio is still connected; after it, idle.
        #expect(ledger.radio.phase(at: 105) == .tail("connected") && ledger.radio.phase(at: 112) == .idle)
        // Closing early cuts the tail: until 105 s, 105 − 100.26201795 = 4.73798205 s of tail.
        #expect(close(ledger.breakdown(until: 105).radio.tail, 4.73798205 * 1.0755))
    }

    /// Uploads at 100 s and 105 s: the second arrives 4.73798205 s into the first's tail.
    ///   promotion once    0.31490307 J
    ///   tail              4.73798205 × 1.0755 + 12.449988 = 5.09569970 + 12.449988 = 17.54568770 J
    /// Uploads at 100 s and 150 s (beyond the tail) pay 2 promotions and 2 whole tails (24.899976 J).
    @Test func twoUploadsCloserThanTheTailShareOneTail() {
        var near = EnergyLedger(profile: Self.lte, start: 0), far = near
        near.transfer(at: 100, bytesUp: Self.up, bytesDown: Self.down)
        near.transfer(at: 105, bytesUp: Self.up, bytesDown: Self.down)
        far.transfer(at: 100, bytesUp: Self.up, bytesDown: Self.down)
        far.transfer(at: 150, bytesUp: Self.up, bytesDown: Self.down)
        let n = near.breakdown(until: 200).radio, f = far.breakdown(until: 200).radio
        #expect(close(n.promotion, 0.31490307) && close(f.promotion, 2 * 0.31490307))
        #expect(close(n.tail, 17.54568770))
        #expect(close(f.tail, 24.899976))
        #expect(close(n.transfer, 2 * 0.00715439) && close(f.transfer, 2 * 0.00715439))
        // Without idle, the near pair costs 17.86 J against 25.23 J for two isolated uploads.
        #expect(n.total - n.idle < f.total - f.idle - 7)
        #expect(n.total < f.total)
    }

    /// A transfer asked for while the previous one is still promoting queues
    /// behind it: one promotion, and the tail starts when both are done.
    @Test func aTransferDuringPromotionQueues() {
        var ledger = EnergyLedger(profile: Self.lte, start: 0)
        ledger.transfer(at: 10, bytesUp: Self.up, bytesDown: Self.down)
        ledger.transfer(at: 10.1, bytesUp: Self.up, bytesDown: Self.down)
        let r = ledger.breakdown(until: 60).radio
        #expect(close(r.promotion, 0.31490307) && close(r.tail, 12.449988))
        // busy until 10 + 0.2601 + 2 × 0.00191795 = 10.2639359; the tail ends 11.576 s later.
        #expect(close(r.idleSeconds, 10 + (60 - 10.2639359 - 11.576)))
    }

    /// 3G, one upload at t = 0:
    ///   promotion   2 s × 0.53 W = 1.06 J
    ///   transfer    1300·8/0.5e6 + 300·8/1.5e6 = 0.0208 + 0.0016 = 0.0224 s at 0.7 W = 0.01568 J; busy until 2.0224 s
    ///   DCH         2.0224 … 7.0224 s,  5 s × 0.7 W  = 3.5 J
    ///   FACH        7.0224 … 19.0224 s, 12 s × 0.35 W = 4.2 J
    ///   idle        from 19.0224 s at 0 W
    @Test func threeGGoesFromDCHToFACHToIdle() {
        var ledger = EnergyLedger(profile: Self.threeG, start: 0)
        ledger.transfer(at: 0, bytesUp: Self.up, bytesDown: Self.down)
        let radio = ledger.radio
        #expect(radio.phase(at: 1) == .busy)
        #expect(radio.phase(at: 6.9) == .tail("dch") && radio.phase(at: 7.1) == .tail("fach"))
        #expect(radio.phase(at: 18.9) == .tail("fach") && radio.phase(at: 19.1) == .idle)
        #expect(close(radio.energy(until: 7.0224).tail, 3.5))
        #expect(close(radio.energy(until: 13.0224).tail, 3.5 + 6 * 0.35))
        let done = radio.energy(until: 60)
        #expect(close(done.promotion, 1.06) && close(done.transfer, 0.01568) && close(done.tail, 7.7))
        #expect(close(done.idle, 0) && close(done.idleSeconds, 60 - 19.0224))
    }

    /// A second upload 10 s after the first ends, in FACH:
    ///   tail so far  5 × 0.7 + 5 × 0.35 = 5.25 J; FACH → DCH 1.5 s × 0.53 W = 0.795 J; then DCH and FACH again.
    /// A heartbeat (100 B up, 150 B down, under FACH's 543/475 B) at the same moment stays in FACH:
    ///   no promotion; 100·8/0.5e6 + 150·8/1.5e6 = 0.0024 s at 0.35 W = 0.00084 J; FACH's 12 s restart.
    @Test func threeGFromFACHRepromotesUnlessTheTransferIsSmall() {
        var big = EnergyLedger(profile: Self.threeG, start: 0)
        big.transfer(at: 0, bytesUp: Self.up, bytesDown: Self.down)
        var small = big
        big.transfer(at: 12.0224, bytesUp: Self.up, bytesDown: Self.down)
        small.transfer(at: 12.0224, bytesUp: 100, bytesDown: 150)
        let b = big.breakdown(until: 100).radio, s = small.breakdown(until: 100).radio
        #expect(close(b.promotion, 1.06 + 0.795))
        // busy again from 13.5224 to 13.5448; then a whole DCH + FACH tail.
        #expect(close(b.tail, 5.25 + 7.7))
        #expect(big.radio.phase(at: 13.5448 + 4.9) == .tail("dch"))
        #expect(close(s.promotion, 1.06) && close(s.transfer, 0.01568 + 0.00084))
        #expect(close(s.tail, 5.25 + 12 * 0.35))
        // After the small transfer the radio is in FACH, never back in DCH, and idle after 12 s.
        #expect(small.radio.phase(at: 12.0248 + 1) == .tail("fach") && small.radio.phase(at: 12.0248 + 12.1) == .idle)
    }

    /// Wi-Fi, one upload:
    ///   promotion  0.0791 × 0.1244 = 0.00984004 J
    ///   transfer   1300·8/10e6 + 300·8/20e6 = 0.00116 s; 0.13286 × 0.00116 + 0.28317 × 0.0104 + 0.13701 × 0.0024
    ///              = 0.00015412 + 0.00294497 + 0.00032882 = 0.00342791 J
    ///   tail       0.2381 × 0.1193 = 0.02840533 J
    @Test func wifiIsCheapBecauseItsTailIsShort() {
        var ledger = EnergyLedger(profile: Self.wifi, start: 0)
        ledger.transfer(at: 0, bytesUp: Self.up, bytesDown: Self.down)
        let r = ledger.breakdown(until: 10).radio
        #expect(close(r.promotion, 0.00984004) && close(r.transfer, 0.00342791) && close(r.tail, 0.02840533))
        #expect(ledger.radio.phase(at: 0.2) == .tail("tail") && ledger.radio.phase(at: 0.4) == .idle)
    }

    /// GPS: high accuracy 0.32 W × 60 s = 19.2 J; balanced 0.32 × 0.1 × 60 = 1.92 J;
    /// significant change 0.32 × 0.01 × 3600 = 11.52 J. CPU: 0.5 W × 2 ms = 0.001 J.
    @Test func gpsByModeAndCPU() {
        var ledger = EnergyLedger(profile: Self.lte, start: 0)
        ledger.gps(mode: .highAccuracy, from: 0, to: 60)
        #expect(close(ledger.gpsJoules, 19.2))
        ledger.gps(mode: .balanced, from: 60, to: 120)
        #expect(close(ledger.gpsJoules, 19.2 + 1.92))
        ledger.gps(mode: .significantChange, from: 120, to: 3720)
        #expect(close(ledger.gpsJoules, 19.2 + 1.92 + 11.52) && close(ledger.gpsSeconds, 3720))
        ledger.gps(mode: .highAccuracy, from: 10, to: 5)  // backwards: nothing
        ledger.cpu(seconds: 0.002)
        let b = ledger.breakdown(until: 3720)
        #expect(close(b.cpu, 0.001) && close(b.gps, 32.64) && close(b.total, b.radio.total + 32.641))
    }

    /// 1 mAh = 3.85 V × 3.6 = 13.86 J. 1 W for an hour = 3600 J = 259.74026 mAh = 8.658009 % of 3000 mAh.
    @Test func batteryUnits() {
        #expect(close(BatteryUnits.milliampHours(joules: 13.86), 1))
        #expect(close(BatteryUnits.milliampHoursPerHour(joules: 1800, seconds: 1800), 259.74026))
        #expect(close(BatteryUnits.percentPerHour(joules: 3600, seconds: 3600, capacity: 3000), 8.658009))
        #expect(close(BatteryUnits.percentPerHour(joules: 3600, seconds: 3600, capacity: 4000), 6.493506))
    }

    @Test func summaryAggregatesByGroup() throws {
        var a = EnergyLedger(profile: Self.lte, start: 0), b = a
        a.gps(mode: .highAccuracy, from: 0, to: 3600)  // 1152 J
        b.gps(mode: .highAccuracy, from: 0, to: 1800)  //  576 J
        var c = EnergyLedger(profile: Self.wifi, start: 0)
        c.cpu(seconds: 10)  // 5 J
        let s = BatterySummary.aggregate([(group: "walkers", ledger: a), (group: "drivers", ledger: c), (group: "walkers", ledger: b)], until: 3600, capacityMAh: 3000)
        #expect(s.groups.map(\.name) == ["walkers", "drivers"])
        let w = s.groups[0]
        #expect(w.devices == 2 && w.network == "lte" && close(w.hoursObserved, 2))
        // radio: idle the whole hour, 0.02005 × 3600 = 72.18 J each.
        #expect(close(w.joules.gps, 1728) && close(w.joules.radio, 144.36) && close(w.meanPerDevice.gps, 864))
        // (1728 + 144.36) J / 13.86 = 135.0909 mAh over 2 device-hours = 67.54545 mAh/h = 2.251515 %/h.
        #expect(close(w.mAhPerHour, 67.545455) && close(w.percentPerHour, 2.2515152))
        let json = String(decoding: try JSONEncoder().encode(s), as: UTF8.self)
        #expect(json.contains("\"mah_per_hour\"") && json.contains("\"radio_tail\"") && json.contains("\"hours_observed\""))
        #expect(try JSONDecoder().decode(BatterySummary.self, from: Data(json.utf8)) == s)
    }

    /// A user file adds a network and replaces one section; the rest stays shipped.
    @Test func aUserFileOverridesAndAdds() throws {
        let mine = try BatteryProfilesFile.parse("""
            battery: { capacity_mah: 4500 }
            networks:
              5g:
                uplink_mbps: 50
                downlink_mbps: 200
                promotion: { seconds: 0.1, power_w: 2 }
                transfer: { alpha_up_w_per_mbps: 0.01, alpha_down_w_per_mbps: 0.005, beta_w: 2.5 }
                tail:
                  - { name: connected, seconds: 10, power_w: 1.5 }
                idle_w: 0.03
            """, file: "mine.yaml", over: Self.profiles)
        #expect(mine.networkNames == ["lte", "3g", "wifi", "5g"])
        #expect(mine.battery.capacityMAh == 4500 && mine.battery.voltage == 3.85)
        #expect(mine.profile("5g")?.radio.tail.first?.power == 1.5 && mine.profile("lte") == Self.lte.with(capacity: 4500))
        #expect(mine.profile("6g") == nil)
    }

    /// Bad files name file:line:column, the key path and what is wrong.
    @Test(arguments: [
        ("networks:\n  lte:\n    uplink_mbps: 6\n    tial: []\n", "bad.yaml:4:5: networks.lte.tial: unknown key \"tial\"; did you mean \"tail\"?"),
        ("gps:\n  high_accuracy: { power_w: lots, duty: 1 }\n", "bad.yaml:2:29: gps.high_accuracy.power_w: expected a number of watts"),
        ("gps:\n  balanced: { power_w: 0.3, duty: 1.5 }\n", "bad.yaml:2:35: gps.balanced.duty: 1.5 is out of range 0.0…1.0"),
        ("gps:\n  precise: { power_w: 0.3, duty: 1 }\n", "bad.yaml:2:3: gps.precise: unknown key \"precise\""),
        ("cpu: { active_w: -1 }\n", "bad.yaml:1:18: cpu.active_w: expected a number of watts"),
        ("networks:\n  x:\n    uplink_mbps: 6\n", "bad.yaml:3:5: networks.x: missing downlink_mbps"),
        ("batery: {}\n", "bad.yaml:1:1: batery: unknown key \"batery\"; did you mean \"battery\"?"),
        ("networks: [lte]\n", "bad.yaml:1:11: networks: expected a mapping"),
        ("cpu: { active_w: [1\n", "not valid YAML"),
    ])
    func badProfileFilesSayWhereAndWhat(yaml: String, expected: String) {
        do {
            _ = try BatteryProfilesFile.parse(yaml, file: "bad.yaml", over: Self.profiles)
            Issue.record("expected an error containing \(expected)")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    /// Below the LTE tail (11.6 s) the radio never sleeps: 3 s and 5 s cost the same
    /// within a few %. 60 s is cheaper; the background far cheaper; batching saves
    /// against the 15 s cadence whose fixes it carries.
    @Test func whatIfShowsTheFlatteningOnLTE() {
        let rows = BatteryWhatIf.table(profile: Self.lte, capacityMAh: 3000)
        #expect(rows.map(\.label) == ["every 3 s", "every 5 s", "every 10 s", "every 15 s", "every 30 s", "every 1 min", "4 fixes / 1 min", "background"])
        let by = Dictionary(uniqueKeysWithValues: rows.map { ($0.label, $0) })
        let three = by["every 3 s"]!, five = by["every 5 s"]!, sixty = by["every 1 min"]!
        #expect(abs(three.mAhPerHour - five.mAhPerHour) / five.mAhPerHour < 0.03)
        #expect(three.awakeShare > 0.99 && five.awakeShare > 0.99)
        #expect(sixty.radioMilliwatts < three.radioMilliwatts * 0.95 && sixty.mAhPerHour < three.mAhPerHour)
        #expect(by["4 fixes / 1 min"]!.radioMilliwatts < by["every 15 s"]!.radioMilliwatts * 0.95)
        #expect(by["background"]!.mAhPerHour < sixty.mAhPerHour / 4)
        // Always connected: the tail is most of the radio energy.
        #expect(three.tailShare > 0.9)
    }

    /// Uploads alone (no friends, no heartbeats) show the tail's step: every
    /// cadence under 11.6 s keeps the radio awake at about the same power.
    ///   10 s: one promotion, then tail for ever: ≈ 1.0755 W.
    ///   30 s: each upload is 500 B up (headers, no rows), 300 B down:
    ///         transfer 1.28804 × (4000/6e6 + 2400/13e6) + 0.43839 × 0.004 + 0.05197 × 0.0024 = 0.00297477 J;
    ///         idle 30 − 0.2601 − 0.00085128 − 11.576 = 18.16304872 s per upload;
    ///         120 × (0.31490307 + 0.00297477 + 12.449988 + 18.16304872 × 0.02005) J / 3600 s = 436.6 mW.
    @Test func uploadsAloneFlattenBelowTheTail() {
        var a = BatteryWhatIf.Assumptions()
        (a.friends, a.heartbeatInterval) = (0, 0)
        let rows = BatteryWhatIf.table(profile: Self.lte, assumptions: a)
        let mw = Dictionary(uniqueKeysWithValues: rows.map { ($0.label, $0.radioMilliwatts) })
        #expect(abs(mw["every 3 s"]! - mw["every 10 s"]!) / mw["every 10 s"]! < 0.01)
        #expect(close(mw["every 10 s"]!, 1075.5, 3))
        #expect(close(mw["every 30 s"]!, 120 * (0.31490307 + 0.00297477 + 12.449988 + 18.16304872 * 0.02005) / 3.6, 0.01))
    }
}

extension BatteryProfile {
    func with(capacity: Double) -> BatteryProfile {
        var p = self
        p.battery.capacityMAh = capacity
        return p
    }
}
