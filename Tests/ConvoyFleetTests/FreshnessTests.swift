@testable import ConvoyFleet
import Testing

/// PRD §4.4 step d on the receiving phone (issue 47, item 12): an update timestamped beyond the stated skew ahead of the
/// receiver's clock is rejected, as one too old or older than the shown one is; within the skew (clocks differ) it shows.
@Suite struct FreshnessTests {
    static let options = DeviceOptions()

    static func judge(_ ts: Double, shown: Double? = nil) -> Freshness {
        Freshness.judge(ts: ts, now: 1_000, shown: shown, maxAge: options.staleAfter, maxSkew: options.futureSkew)
    }

    @Test func anUpdateFromTheFutureIsNotShown() {
        #expect(Self.options.futureSkew == 60)
        #expect(Self.judge(1_000 + 61) == .future && Self.judge(1_000 + 3_600) == .future)
        // The controls: a sender's clock a little ahead shows; too old and older than shown are stale.
        #expect(Self.judge(1_000 + 59) == .show && Self.judge(990) == .show && Self.judge(995, shown: 990) == .show)
        #expect(Self.judge(1_000 - 121) == .stale && Self.judge(985, shown: 990) == .stale)
    }
}
