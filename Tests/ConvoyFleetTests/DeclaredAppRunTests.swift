@testable import ConvoyFleet
import ConvoyCrypto
import ConvoyJSON
import ConvoyMetrics
import ConvoyServer
import ConvoySodium
import ConvoyWire
import Foundation
import Testing

/// Green Box declared in a file (examples/apps/greenbox-prd.yaml) runs as the built-in one in its PRD mode: the same
/// pairs requested, accepted and left pending on the phones, every update accounted for, and every row it wrote
/// opened by its recipient into the PRD's plaintext.
@Suite(.serialized) struct DeclaredAppRunTests {
    static func scenario(_ app: String) throws -> Scenario {
        try FleetRunTests.scenario(devices: 10, steady: "8s", extra: app).withSocial(Social(friends: 2...3, decideLater: 0.3, acceptLater: 0.5))
    }

    struct Run {
        var counters: [String: Int]
        var accounting: Accounting
        var rows: [SealedRow]
        var keys: [String: BoxKeyPair]
        var histograms: Set<String>
        /// Each row's sender and recipient, and each active friendship's asker and the other.
        var senders: [(from: String, to: String)]
        var friendships: [(asker: String, other: String)]
        /// How many distinct (sender, created_at) the rows have: a bulk insert's rows share its statement's time.
        var stamps: Int
    }

    struct SealedRow: Decodable {
        let id: Int64
        let sender_id: String
        let recipient_id: String
        let payload: String
    }

    static func run(_ scenario: Scenario) async throws -> Run {
        var result: Run?
        try await withEmbeddedBackend { embedded, engine in
            let target = SupabaseTarget(url: embedded.keys.url, anonKey: embedded.keys.anonKey)
            var options = DeviceOptions()
            (options.pairingAskAfter, options.pairingAcceptAfter) = (0.2...1, 0.3...1.5)
            let fleet = FleetRun(.init(scenario: scenario, scenarioFile: "e2e.yaml", target: target, runID: "decl" + UUID().uuidString.prefix(6).lowercased(),
                                       drain: 3, device: options), engine: engine, logger: .quiet)
            let outcome = try await FleetGate.run { try await fleet.run() }
            let service = embedded.keys.serviceRoleKey
            let admin = SupabaseREST(SupabaseHTTP(engine: engine, target: SupabaseTarget(url: embedded.keys.url, anonKey: service)))
            let rows = try await admin.select("encrypted_locations", query: "select=id,sender_id,recipient_id,payload&order=id.asc&limit=100000",
                                              token: service, as: SealedRow.self).rows
            let senders = try await admin.select("encrypted_locations", query: "select=sender_id,recipient_id,created_at&limit=100000", token: service)
            let friendships = try await admin.select("friendships", query: "select=requested_by,user_id_1,user_id_2&status=eq.active", token: service)
            result = Run(counters: outcome.metrics.counters, accounting: outcome.accounting, rows: rows,
                         keys: Dictionary(outcome.accounts.map { ($0.userID, $0.keys) }, uniquingKeysWith: { a, _ in a }),
                         histograms: Set(outcome.metrics.histograms.keys.filter { outcome.metrics.statistic($0, "count") != nil }),
                         senders: senders.map { ($0["sender_id"]?.string ?? "", $0["recipient_id"]?.string ?? "") },
                         friendships: friendships.map { f in
                             let asker = f["requested_by"]?.string ?? ""
                             return (asker, f["user_id_1"]?.string == asker ? f["user_id_2"]?.string ?? "" : f["user_id_1"]?.string ?? "")
                         },
                         stamps: Set(senders.map { "\($0["sender_id"]?.string ?? "") \($0["created_at"]?.string ?? "")" }).count)
        }
        return try #require(result)
    }

    @Test func declaredGreenBoxPairsSharesAndSealsAsTheBuiltInOne() async throws {
        let builtIn = try await Self.run(try Self.scenario("app: { name: greenbox, payload: prd, pairing: prd, inserts: each }"))
        let declared = try await Self.run(try Self.scenario("app: { file: \(AppFileTests.greenBox) }"))
        // Both post one insert a friend (the file's requests: per_recipient, the built-in's inserts: each): a time a row.
        #expect(declared.stamps == declared.rows.count && builtIn.stamps == builtIn.rows.count, "\(declared.stamps) \(builtIn.stamps)")
        // The seed decides the pairs and who leaves a request for later: the same on both, requested and accepted on the phones.
        for key in ["pairing_requests", "pairing_decided_later", "pairing_accepted", "pairing_friends_made"] {
            #expect(declared.counters[key] != nil && declared.counters[key] == builtIn.counters[key], "\(key): \(declared.counters) vs \(builtIn.counters)")
        }
        for run in [builtIn, declared] {
            #expect(run.counters["pairing_failures"] == nil && run.counters["decrypt_failures"] == nil && run.counters["received_unmatched"] == nil)
            // Every row is one sealed update, opened by its recipient into exactly the PRD's four keys.
            #expect(run.rows.count == (run.counters["sent"] ?? 0) + (run.counters["sent_offline"] ?? 0))
            // A sender's rows to a friend committed out of their order (ids ascend with commits): a phone posts a tick
            // without waiting for the one before (the open workload), and on a loaded machine a later post can overtake.
            var newest: [String: Int64] = [:]
            var overtaken = 0
            for row in run.rows {
                let pair = try #require(run.keys[row.recipient_id])
                let sealed = try #require(Data(base64Encoded: row.payload))
                let plain = try SealedBox.open(Array(sealed), with: pair)
                let payload = try GreenBoxPRDTests.StrictPRDPayload.decode(plain)
                let link = row.sender_id + " " + row.recipient_id
                if let shown = newest[link], payload.ts < shown { overtaken += 1 }
                newest[link] = max(newest[link] ?? payload.ts, payload.ts)
            }
            // Nothing lost but what the app rejects as stale (PRD §4.4 d), and only where it had a cause: an update that
            // arrived after a newer one because its post was overtaken, or because the loaded machine took its recipient
            // off Realtime or made it retry an insert.
            let disturbed = (run.counters["reconnects"] ?? 0) + (run.counters["retry_posted"] ?? 0) > 0
            let explained = (run.accounting.lost["stale"] ?? 0) <= overtaken || disturbed && run.accounting.lostTotal * 50 <= run.accounting.sent
            #expect(run.accounting.closes && run.accounting.delivered > 20
                    && (run.accounting.lostTotal == 0 || Set(run.accounting.lost.keys) == ["stale"] && explained),
                    "\(run.accounting.lost), \(overtaken) overtaken \(run.counters)")
        }
    }

    /// PRD §4.4 step 2f, step for step (issue 47, item 12): with `inserts: each` a tick posts one insert a friend, so every
    /// row has a time of its own, where a bulk insert's rows share their statement's (the control); every update is
    /// still accounted for and delivered.
    @Test func eachFriendsRowIsItsOwnInsertAsThePRDSays() async throws {
        let bulk = try await Self.run(try Self.scenario("app: { name: greenbox, payload: prd, pairing: prd }"))
        let each = try await Self.run(try Self.scenario("app: { name: greenbox, payload: prd, pairing: prd, inserts: each }"))
        #expect(bulk.rows.count > 20 && bulk.stamps < bulk.rows.count, "bulk: \(bulk.stamps) stamps for \(bulk.rows.count) rows")
        #expect(each.rows.count > 20 && each.stamps == each.rows.count, "each: \(each.stamps) stamps for \(each.rows.count) rows")
        #expect(each.accounting.closes && each.accounting.delivered > 20 && each.rows.count == (each.counters["sent"] ?? 0) + (each.counters["sent_offline"] ?? 0))
        // More requests for the same rows: one a friend instead of one a tick.
        #expect((each.counters["http_requests"] ?? 0) > (bulk.counters["http_requests"] ?? 0))
    }

    /// One-directional links made on the phones (`links.sharing: inviter` in Green Box's file): every row goes from the
    /// one who asked to the one who accepted, none the other way, and the asker's "first update from the friend" is
    /// never waited for (it never comes). The control is the mutual file, whose rows go both ways and whose askers
    /// hear their friends.
    @Test func oneDirectionalLinksShareFromTheAskerAlone() async throws {
        let text = try String(contentsOfFile: AppFileTests.greenBox, encoding: .utf8)
        #expect(text.contains("  during: run\n"))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gb-one-way-\(UUID().uuidString.prefix(6)).yaml").path
        try text.replacingOccurrences(of: "  during: run\n", with: "  during: run\n  sharing: inviter\n").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try AppFile.load(file).links.sharing == .inviter)

        let mutual = try await Self.run(try Self.scenario("app: { file: \(AppFileTests.greenBox) }"))
        let oneWay = try await Self.run(try Self.scenario("app: { file: \(file) }"))
        for run in [mutual, oneWay] {
            #expect(run.counters["pairing_failures"] == nil && run.counters["decrypt_failures"] == nil && run.counters["received_unmatched"] == nil)
            #expect(run.accounting.closes && run.accounting.delivered > 10 && run.accounting.lostTotal == 0, "\(run.accounting.lost)")
            #expect(!run.friendships.isEmpty)
        }
        func directions(_ run: Run) -> (forward: Int, backward: Int) {
            let forward = Set(run.friendships.map { "\($0.asker)>\($0.other)" }), backward = Set(run.friendships.map { "\($0.other)>\($0.asker)" })
            return (run.senders.filter { forward.contains("\($0.from)>\($0.to)") }.count, run.senders.filter { backward.contains("\($0.from)>\($0.to)") }.count)
        }
        let (m, o) = (directions(mutual), directions(oneWay))
        #expect(m.forward > 0 && m.backward > 0, "the control shares both ways: \(m)")
        #expect(o.forward > 0 && o.backward == 0 && o.forward == oneWay.senders.count, "one way: \(o) of \(oneWay.senders.count) rows")
        #expect(mutual.histograms.contains("pairing_first_update"))
        #expect(!oneWay.histograms.contains("pairing_first_update"), "an asker that is never shared with waits for no first update")
    }
}
