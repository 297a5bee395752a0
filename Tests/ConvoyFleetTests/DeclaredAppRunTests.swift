@testable import ConvoyFleet
import ConvoyCrypto
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
        var rows: [GreenBoxPRDTests.Row]
        var keys: [String: BoxKeyPair]
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
            let rows = try await admin.select("encrypted_locations", query: "select=id,recipient_id,payload&order=id.asc&limit=100000",
                                              token: service, as: GreenBoxPRDTests.Row.self).rows
            result = Run(counters: outcome.metrics.counters, accounting: outcome.accounting, rows: rows,
                         keys: Dictionary(outcome.accounts.map { ($0.userID, $0.keys) }, uniquingKeysWith: { a, _ in a }))
        }
        return try #require(result)
    }

    @Test func declaredGreenBoxPairsSharesAndSealsAsTheBuiltInOne() async throws {
        let builtIn = try await Self.run(try Self.scenario("app: { name: greenbox, payload: prd, pairing: prd }"))
        let declared = try await Self.run(try Self.scenario("app: { file: \(AppFileTests.greenBox) }"))
        // The seed decides the pairs and who leaves a request for later: the same on both, requested and accepted on the phones.
        for key in ["pairing_requests", "pairing_decided_later", "pairing_accepted", "pairing_friends_made"] {
            #expect(declared.counters[key] != nil && declared.counters[key] == builtIn.counters[key], "\(key): \(declared.counters) vs \(builtIn.counters)")
        }
        for run in [builtIn, declared] {
            #expect(run.counters["pairing_failures"] == nil && run.counters["decrypt_failures"] == nil && run.counters["received_unmatched"] == nil)
            #expect(run.accounting.closes && run.accounting.delivered > 20 && run.accounting.lostTotal == 0, "\(run.accounting.lost)")
            // Every row is one sealed update, opened by its recipient into exactly the PRD's four keys.
            #expect(run.rows.count == (run.counters["sent"] ?? 0) + (run.counters["sent_offline"] ?? 0))
            for row in run.rows {
                let pair = try #require(run.keys[row.recipient_id])
                let sealed = try #require(Data(base64Encoded: row.payload))
                let plain = try SealedBox.open(Array(sealed), with: pair)
                _ = try GreenBoxPRDTests.StrictPRDPayload.decode(plain)
            }
        }
    }
}
