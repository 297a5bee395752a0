@testable import ConvoyFleet
import ConvoyMetrics
import Testing

/// Why a direct message was lost: its partner's connection was down (`recipient_disconnected`), the partner had not
/// joined the pair's channel as it was sent (`partner_not_on_pair_channel`: the sender opens its side on seeing the
/// partner, the partner on seeing the sender, and nothing relays a message written between the two), or neither
/// (`not_received`, the backend's loss).
@Suite struct DirectLedgerTests {
    @Test func eachLostMessageIsLostForWhatHeldAsItWasSent() {
        let ledger = DirectLedger()
        // Member 1 is on its pair channel with member 0 from 10 to 20 and again from 30; its connection is down 40–45.
        ledger.opened(1, with: 0, at: 10)
        ledger.closed(1, with: 0, at: 20)
        ledger.opened(1, with: 0, at: 30)
        for (seq, at) in [(1, 5.0), (2, 15.0), (3, 25.0), (4, 35.0), (5, 42.0), (6, 50.0)] {
            ledger.posted(sender: 0, seq: UInt64(seq), to: 1, at: at)
        }
        ledger.delivered(sender: 0, seq: 6, by: 1)
        // A channel opened twice without a close between is one span; member 1's channel with another partner is not this one.
        ledger.opened(1, with: 0, at: 33)
        ledger.opened(1, with: 2, at: 0)
        let report = ledger.close { $0 == 1 ? [.init(from: 40, to: 45)] : [] }
        #expect(report.expected == 6 && report.delivered == 1)
        #expect(report.lost == ["partner_not_on_pair_channel": 2, "not_received": 2, "recipient_disconnected": 1], "\(report.lost)")
    }
}
