import ConvoyWire

/// A call (or a few) a phone makes at a cadence beside its shape's work: a declared app's `actions:` (docs/apps.md,
/// "Actions"), the non-location load of an app. Each is timed as a histogram of its own name, which thresholds can
/// use (`ride_claim.p95 < 300ms`), and counted: `actions.<name>` made, `action_skipped.<name>` with nothing to act
/// on (a select found no row), `action_failures.<name>` refused or unanswered.
public struct AppAction: Sendable {
    public var name: String
    /// Seconds between two on one phone, drawn uniformly (the first at a random phase of the upper bound).
    public var every: ClosedRange<Double>
    /// The share of phones that make it, 0…1 (drawn from each phone's seed).
    public var share: Double
    /// Makes the calls as `session`'s user, the `n`th time on this phone (1, 2, …).
    public var perform: @Sendable (_ session: Session, _ n: Int, _ http: SupabaseHTTP) async throws(SupabaseError) -> Outcome

    /// What an action did: whether it found something to act on, the requests it made, their bodies' bytes.
    public struct Outcome: Sendable, Equatable {
        public var acted: Bool
        public var requests: Int
        public var bytes: Int

        public init(acted: Bool, requests: Int, bytes: Int) { (self.acted, self.requests, self.bytes) = (acted, requests, bytes) }
    }

    public init(name: String, every: ClosedRange<Double>, share: Double = 1,
                perform: @escaping @Sendable (_ session: Session, _ n: Int, _ http: SupabaseHTTP) async throws(SupabaseError) -> Outcome) {
        (self.name, self.every, self.share, self.perform) = (name, every, share, perform)
    }
}
