import Foundation
import Testing

/// QuickPic's friends made on the phones while they message (`pairing: run`), with access tokens short enough
/// (`auth.token_ttl`) that every phone rotates its refresh token during a 30 s run: every request is looked up,
/// sent, seen by its friend in `GET /friends/requests` and answered as planned; every phone refreshes; nothing is lost.
@Suite struct QuickPicFriendsRunTests {
    static let scenario = """
        name: quickpic-friends-test
        seed: 36
        app: {name: quickpic, pairing: run}
        groups:
          - name: a
            count: 14
            message_every: 2s..4s
            poll_every: 1s..2s
        social:
          friends: 2..3
          decide_later: 15%
          decline: 15%
        auth:
          token_ttl: 8s
        timeline:
          arrival_rate: 20/s
          steady: 30s
          ramp_down: 5s
        thresholds:
          - pairing_failures == 0
          - token_refresh_failures == 0
          - mailbox.loss == 0

        """

    @Test func everyRequestIsAnsweredAsPlannedAndEveryPhoneRefreshes() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("friends.yaml")
        try Self.scenario.write(to: file, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", file.path, "--out", out.path)
        #expect(r.status == 0, "\(r.stdout.suffix(3000))\n\(r.stderr.suffix(2000))")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        let c = try #require(summary["counters"] as? [String: Int])
        let latency = try #require(summary["latency_ms"] as? [String: [String: Any]])
        let requests = c["pairing_requests"] ?? 0
        let (accepted, later, declined) = (c["pairing_accepted"] ?? 0, c["pairing_decided_later"] ?? 0, c["pairing_declined"] ?? 0)
        #expect(requests >= 14 && accepted > 0 && later > 0 && declined > 0, "\(c)")
        #expect(requests == accepted + later + declined, "every request answered as planned: \(c)")
        #expect(latency["pairing_lookup"]?["count"] as? Int == requests, "each asked after GET /users/:username")
        #expect(latency["pairing_accept"]?["count"] as? Int == accepted && c["pairing_friends_made"] == 2 * accepted,
                "each acceptance seen by its asker, both sides friends: \(c)")
        #expect(c["token_refresh_phones"] == 14 && (c["token_refreshes"] ?? 0) >= 3 * 14 && c["token_refresh_failures"] == nil, "\(c)")
        let mailbox = try #require(summary["mailbox"] as? [String: Any])
        #expect((mailbox["delivered"] as? Int ?? 0) > 50 && (mailbox["lost"] as? [String: Int] ?? [:]).isEmpty, "\(mailbox)")
        let text = try String(contentsOf: out.appendingPathComponent("summary.md"), encoding: .utf8)
        #expect(text.contains("## Friends made during the run") && text.contains("\(requests) requests (each after a lookup: \(requests))"))
        #expect(text.contains("## Sessions") && text.contains("by 14 of 14 phones, 0 failed"), "\(text.suffix(2500))")
    }
}
