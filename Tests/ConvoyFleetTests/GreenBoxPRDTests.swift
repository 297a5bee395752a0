@testable import ConvoyFleet
import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoyServer
import ConvoySodium
import ConvoyWire
import Foundation
import Logging
import Testing

/// Green Box with exactly the PRD's payload (`app: {name: greenbox, payload: prd}`):
/// what a client built to the PRD decodes, every row of a run, and the
/// latency still measured from what the senders kept.
@Suite(.serialized) struct GreenBoxPRDTests {
    /// A decoder as strict as Kotlin's default: `ts` an integer, no key but the PRD's four.
    struct StrictPRDPayload: Decodable {
        let lat: Double
        let lon: Double
        let ts: Int64
        let acc: Double

        struct AnyKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: AnyKey.self)
            let keys = Set(c.allKeys.map(\.stringValue))
            guard keys == ["lat", "lon", "ts", "acc"] else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "keys \(keys.sorted()), not the PRD's"))
            }
            lat = try c.decode(Double.self, forKey: AnyKey(stringValue: "lat"))
            lon = try c.decode(Double.self, forKey: AnyKey(stringValue: "lon"))
            ts = try c.decode(Int64.self, forKey: AnyKey(stringValue: "ts"))
            acc = try c.decode(Double.self, forKey: AnyKey(stringValue: "acc"))
        }

        /// Decodes `bytes`, also refusing a `ts` written with a fraction or an exponent (`1.7e9`, `1700000000.0`).
        static func decode(_ bytes: [UInt8]) throws -> StrictPRDPayload {
            let text = String(decoding: bytes, as: UTF8.self)
            guard text.range(of: #""ts":-?[0-9]+[,}]"#, options: .regularExpression) != nil else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "ts is not written as an integer: \(text)"))
            }
            return try JSONDecoder().decode(StrictPRDPayload.self, from: Data(bytes))
        }
    }

    struct Row: Decodable {
        let id: Int64
        let recipient_id: String
        let payload: String
    }

    @Test func everyPayloadOfAPRDRunDecodesStrictlyAndLatencyIsStillMeasured() async throws {
        let scenario = try FleetRunTests.scenario(devices: 8, extra: "app:\n  name: greenbox\n  payload: prd")
        #expect(scenario.app == AppChoice(name: "greenbox", options: AppOptions(["payload": "prd"])))
        try await withEmbeddedBackend { embedded, engine in
            let target = SupabaseTarget(url: embedded.keys.url, anonKey: embedded.keys.anonKey)
            let fleet = FleetRun(.init(scenario: scenario, scenarioFile: "e2e.yaml", target: target, runID: "prd" + UUID().uuidString.prefix(6).lowercased(),
                                       drain: 3), engine: engine, logger: .quiet)
            let outcome = try await FleetGate.run { try await fleet.run() }

            // Every row the run stored, read with the service key, opened with its recipient's key, decoded strictly.
            let service = embedded.keys.serviceRoleKey
            let admin = SupabaseREST(SupabaseHTTP(engine: engine, target: SupabaseTarget(url: embedded.keys.url, anonKey: service)))
            let rows = try await admin.select("encrypted_locations", query: "select=id,recipient_id,payload&order=id.asc&limit=100000",
                                              token: service, as: Row.self).rows
            let keys = Dictionary(outcome.accounts.map { ($0.userID, $0.keys) }, uniquingKeysWith: { a, _ in a })
            var decoded = 0
            for row in rows {
                let pair = try #require(keys[row.recipient_id], "row \(row.id) is for a device of this run")
                let plain = try SealedBox.open(try #require(Data(base64Encoded: row.payload)), with: pair)
                let p = try StrictPRDPayload.decode(plain)
                #expect((-90...90).contains(p.lat) && (-180...180).contains(p.lon) && p.acc >= 0 && p.ts > 1_600_000_000)
                decoded += 1
            }
            let counters = outcome.metrics.counters
            #expect(counters["http_errors"] == nil, "\(counters.filter { $0.key.hasPrefix("http_errors") })")
            #expect(decoded > 20 && decoded == rows.count)
            #expect(decoded == (counters["sent"] ?? 0) + (counters["sent_offline"] ?? 0), "every sealed update is a row, and each decodes")
            // The accounting closes, and every receipt was matched to what its sender kept: latency measured end to end.
            #expect(outcome.accounting.closes && outcome.accounting.delivered > 0)
            #expect(counters["received_unmatched"] == nil && counters["received_without_seq"] == nil)
            #expect(outcome.metrics.statistic("e2e_latency", "count") == Double(counters["received", default: 0] + counters["stale_rejected", default: 0]))
            #expect((outcome.metrics.statistic("e2e_latency", "p50") ?? 0) > 0)
        }
    }

    struct FriendshipRow: Decodable {
        let status: String
        let preference_1: String?
        let preference_2: String?
    }

    /// The PRD's pairing on the phones during the run: requests inserted pending, accepted over
    /// Realtime, decide-later rows left pending and some accepted later, all measured.
    @Test func phonesPairThePRDsWayDuringTheRunAndItIsMeasured() async throws {
        let scenario = try FleetRunTests.scenario(devices: 10, steady: "8s", extra: """
            app: { name: greenbox, payload: prd, pairing: prd }
            """).withSocial(Social(friends: 2...3, decideLater: 0.3, acceptLater: 0.5))
        try await withEmbeddedBackend { embedded, engine in
            let target = SupabaseTarget(url: embedded.keys.url, anonKey: embedded.keys.anonKey)
            // Users who think for a second at most: the pairs are made early in the steady part, and share back before it ends.
            var options = DeviceOptions()
            (options.pairingAskAfter, options.pairingAcceptAfter) = (0.2...1, 0.3...1.5)
            let fleet = FleetRun(.init(scenario: scenario, scenarioFile: "e2e.yaml", target: target, runID: "pair" + UUID().uuidString.prefix(6).lowercased(),
                                       drain: 3, device: options), engine: engine, logger: .quiet)
            let outcome = try await FleetGate.run { try await fleet.run() }
            let c = outcome.metrics.counters
            let graph = SocialGraph(devices: 10, social: scenario.social, seed: scenario.seed)
            let pending = graph.pairs.filter(\.pending).count
            #expect(pending > 0 && pending < graph.pairs.count, "the seed gives both kinds")

            // Every pair was requested on a phone; every request not left for later was accepted; a share of the rest later.
            #expect(c["pairing_requests"] == graph.pairs.count && c["pairing_failures"] == nil)
            let later = c["pairing_accepted_later", default: 0]
            #expect(c["pairing_decided_later"] == pending && later > 0 && later <= pending, "\(c.filter { $0.key.hasPrefix("pairing") }) pending \(pending)")
            #expect(c["pairing_accepted"] == graph.pairs.count - pending + later)
            // The backend holds what the phones did: active rows for the accepted, pending rows for the rest, and no
            // preference (the PRD keeps it on the phone; its friendships table has no column for it).
            let service = embedded.keys.serviceRoleKey
            let admin = SupabaseREST(SupabaseHTTP(engine: engine, target: SupabaseTarget(url: embedded.keys.url, anonKey: service)))
            let rows = try await admin.select("friendships", query: "select=status,preference_1,preference_2", token: service, as: FriendshipRow.self).rows
            #expect(rows.count == graph.pairs.count)
            #expect(rows.filter { $0.status == "active" }.count == c["pairing_accepted"])
            #expect(rows.filter { $0.status == "pending" }.count == pending - later)
            #expect(rows.allSatisfy { $0.preference_1 == nil && $0.preference_2 == nil })
            // Measured: request → accepted on the asking phone, and → the first update back; then friends shared as usual.
            #expect(outcome.metrics.statistic("pairing_accept", "count") == Double(graph.pairs.count - pending))
            #expect(outcome.metrics.statistic("pairing_accept_later", "count") == Double(later), "measured apart")
            #expect((outcome.metrics.statistic("pairing_first_update", "count") ?? 0) >= Double(graph.pairs.count - pending))
            #expect(c["pairing_friends_made"] == 2 * (c["pairing_accepted"] ?? 0), "both sides of each accepted pair")
            #expect(outcome.accounting.closes && outcome.accounting.delivered > 0 && c["received_unmatched"] == nil)
            // A new friend's first updates are received, not dropped as a stranger's while its key is read.
            #expect(c["received_from_strangers"] == nil && outcome.accounting.lostTotal == 0, "\(outcome.accounting.lost)")
        }
    }

    /// What the PRD lets phones differ in, per group: "When In Use" users share nothing in the background;
    /// continuous background sharing runs the GPS and skips no tick; keys read before every send or cached;
    /// GPS-denied fallback and Laplace fuzzing reach the recipients as circles.
    @Test func groupsDifferAsThePRDLetsThem() async throws {
        let scenario = try ScenarioFile.parse("""
            name: variations
            seed: 5
            groups:
              - { name: wiu, count: 4, cadence: 600ms..900ms, background_share: 100%, when_in_use_share: 100% }
              - name: cont
                count: 4
                cadence: 600ms..900ms
                background_share: 100%
                background_mode: continuous
                key_lookup: every_send
                gps_denied: { windows: [0s..1h], fallback: cell }
              - { name: fg, count: 4, cadence: 600ms..900ms, precise_share: 0%, key_lookup: cached, key_cache_ttl: 1h, general: laplace, laplace_mean: 50m }
            social: { friends: 2..3 }
            timeline: { arrival_rate: 40/s, steady: 5s, ramp_down: 500ms }
            """, file: "variations.yaml")
        let outcome = try await FleetRunTests.run(scenario)
        let c = outcome.metrics.counters
        #expect((c["background_not_permitted"] ?? 0) > 0 && c["background_skipped"] == nil, "\(c)")
        let battery = try #require(outcome.battery)
        let gps = Dictionary(battery.groups.map { ($0.name, $0.gpsJoules) }, uniquingKeysWith: { a, _ in a })
        #expect(gps["wiu"] == 0 && (gps["cont"] ?? 0) > 0, "no location permission in the background, no GPS: \(gps)")
        // Every tick of the continuous group read its keys; the cached group read them once per device at most.
        // Ticks are `updates` (one request each) of the continuous and the cached groups. The continuous group reads
        // before each tick (one more for each of its 4 devices whose read was in flight as it left); the cached group
        // (4 devices, a TTL longer than the run) once per device: reading on every tick would add about 30.
        let (lookups, ticks) = (c["key_lookups"] ?? 0, c["updates"] ?? 0)
        #expect(lookups > 4 && lookups <= ticks + 8, "\(lookups) lookups, \(ticks) ticks")
        #expect(c["key_lookup_failures"] == nil && c["key_changes_seen"] == nil)
        // Cell fallback (300–600 m) and Laplace noise of 50 m mean both widen acc past the 50 m dot limit.
        #expect((c["render.circle"] ?? 0) > 0 && c["render.dot"] == nil, "\(c.filter { $0.key.hasPrefix("render") })")
        #expect(outcome.accounting.closes && outcome.accounting.delivered > 0)
    }

    @Test func theSenderKeepsWhatItSealedAndTheRecipientFindsItByItsPlaintext() {
        let sent = SentUpdates(horizon: 10)
        let p = LocationPayload(lat: 51.5, lon: -0.12, ts: 1_700_000_000, acc: 5)
        sent.record(sender: 1, recipient: 2, p, seq: 7, sentNanos: 1_700_000_000_250_000_000)
        // The same plaintext again within the second (a stationary phone): told apart by what the recipient has.
        sent.record(sender: 1, recipient: 2, p, seq: 8, sentNanos: 1_700_000_000_900_000_000)
        #expect(sent.find(sender: 1, recipient: 2, p, has: { _ in false })?.seq == 7)
        #expect(sent.find(sender: 1, recipient: 2, p, has: { $0 == 7 })?.seq == 8)
        #expect(sent.find(sender: 1, recipient: 2, p, has: { _ in true })?.seq == 7, "a duplicate of the first")
        #expect(sent.find(sender: 2, recipient: 1, p, has: { _ in false }) == nil, "another pair")
        var moved = p
        moved.lat += 1e-7
        #expect(sent.find(sender: 1, recipient: 2, moved, has: { _ in false }) == nil, "another plaintext")
        // Past the horizon, entries go as new ones come.
        sent.record(sender: 3, recipient: 4, p, seq: 1, sentNanos: 1_700_000_020_000_000_000)
        #expect(sent.find(sender: 1, recipient: 2, p, has: { _ in false }) == nil && sent.count == 1)
    }

    @Test func thePRDPlaintextHasThePRDsKeysAndWholeSeconds() throws {
        let update = LocationPayload(lat: 34.052, lon: -118.243, ts: 1_678_886_400.734, acc: 5, seq: 3, sentNanos: 1_678_886_400_734_000_000)
        let prd = GreenBoxApp(payload: .prd).plaintext(of: update)
        #expect(String(decoding: try prd.jsonBytes(), as: UTF8.self) == #"{"lat":34.052,"lon":-118.243,"ts":1678886400,"acc":5}"#)
        #expect(GreenBoxApp(payload: .convoy).plaintext(of: update) == update)
    }
}

extension Scenario {
    func withSocial(_ social: Social) -> Scenario {
        var s = self
        s.social = social
        return s
    }
}

/// The PRD's pairing as the app does each step, against convoy serve: what a phone finds when it
/// subscribes again after not listening (requests to it, its own requests accepted).
@Suite struct GreenBoxPairingCatchUpTests {
    @Test func aPhoneFindsRequestsToItAndItsOwnAcceptedOnes() async throws {
        try await withEmbeddedBackend { embedded, engine in
            let target = SupabaseTarget(url: embedded.keys.url, anonKey: embedded.keys.anonKey)
            let app = GreenBoxApp(payload: .prd, pairing: .prd)
            let onboarding = Onboarding(engine: engine, target: target, runID: "cu" + UUID().uuidString.prefix(6).lowercased(), app: app)
            let a = try await onboarding.signUp(0), b = try await onboarding.signUp(1)
            let http = SupabaseHTTP(engine: engine, target: target)
            let id = try await app.requestFriendship(to: Invitee(userID: b.userID, email: b.email), preference: "precise", from: a.session, via: http)
            #expect(try await app.pendingRequests(to: b.userID, token: b.session.accessToken, via: http) == [.requested(id: id, from: a.userID)])
            #expect(try await app.acceptedRequests(by: a.userID, token: a.session.accessToken, via: http).isEmpty, "not yet")
            try await app.acceptFriendship(id, preference: "general", token: b.session.accessToken, via: http)
            #expect(try await app.acceptedRequests(by: a.userID, token: a.session.accessToken, via: http) == [.accepted(id: id, by: b.userID)])
            // Accepting again (a retry after a timeout that committed) is fine; accepting what the invitee cannot see is not.
            try await app.acceptFriendship(id, preference: "general", token: b.session.accessToken, via: http)
            await #expect(throws: SupabaseError.self) { try await app.acceptFriendship(String(Int64(id)! + 1000), preference: "general", token: b.session.accessToken, via: http) }
            #expect(try await app.pendingRequests(to: b.userID, token: b.session.accessToken, via: http).isEmpty)
            // The invitee cannot see the inviter's requests as its own: RLS shows members, the filter asks for requester.
            #expect(try await app.acceptedRequests(by: b.userID, token: b.session.accessToken, via: http).isEmpty)
        }
    }
}

/// Green Box's payload has no reduced-accuracy flag: a GPS-denied fix is sealed as any other (its accuracy says it).
@Suite struct GreenBoxReducedFlagTests {
    @Test func greenBoxPlaintextsCarryNoFixFlag() throws {
        var p = LocationPayload(lat: 1, lon: 2, ts: 3.5, acc: 80, seq: 9, sentNanos: 7)
        p.reduced = true
        for app in [GreenBoxApp(payload: .convoy), GreenBoxApp(payload: .prd)] {
            #expect(!String(decoding: try app.plaintext(of: p).jsonBytes(), as: UTF8.self).contains("fix"))
        }
        #expect(try SurvaleApp().seal(p, to: BoxKeyPair().publicKey).contains(#""fix":"reduced""#))
    }
}
