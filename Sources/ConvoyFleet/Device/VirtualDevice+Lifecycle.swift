/// A phone's lifecycle, as one state machine owned by its `VirtualDevice`:
///
///     waiting ──arrive──> online ──leave──> leaving ──disconnect──> gone
///        └──────────────────leave / disconnect─────────────────────────┘
///
/// While online it is subscribed or not yet, and it may have lost its
/// Realtime connection or channel (`lostAt`): the next subscription after a
/// loss is a comeback, which the phone answers by catching up.
struct Lifecycle: Sendable {
    private enum State: Sendable {
        /// Onboarded, not yet arrived.
        case waiting
        /// Arrived: sharing, and receiving once subscribed.
        case online(since: Double)
        /// Stopped sharing at the intended time `at` (−∞ when no time was planned), still receiving what is in flight.
        case leaving(since: Double, at: Double)
        case gone
    }

    /// What a subscription means to the phone.
    enum Subscribed: Equatable {
        /// The first one: online (and counted so) from now; `since` is when it arrived.
        case first(arrivedAt: Double?)
        /// Back after a loss at `lostAt` (wall clock): catch up from there.
        case back(lostAt: Double)
        /// Nothing changes (a rejoin without a loss, or after leaving).
        case unchanged
    }

    private var state = State.waiting
    /// The intended time the run will have it leave, when it planned one: a tick intended from then on is not
    /// shared even when it runs before the leave, and one intended before it is shared even when it runs after
    /// (the scheduler starts each job in a task of its own, so two due together may reach the phone in either order).
    private(set) var plannedLeave = Double.infinity
    /// It connected to Realtime and asked for its channel (whether or not it got it).
    private(set) var joined = false
    private(set) var subscribed = false
    /// Wall time the connection or channel last went down, until the next subscription.
    private(set) var lostAt: Double?

    /// Comes online at `t`; false when it is not waiting (it arrived already, or left before arriving).
    mutating func arrive(at t: Double) -> Bool {
        guard case .waiting = state else { return false }
        state = .online(since: t)
        return true
    }

    mutating func joinedRealtime() { joined = true }

    mutating func subscription() -> Subscribed {
        if !subscribed {
            subscribed = true
            if case .online(let since) = state { return .first(arrivedAt: since) }
            return .first(arrivedAt: nil)
        }
        guard let at = lostAt else { return .unchanged }
        lostAt = nil
        return .back(lostAt: at)
    }

    /// The connection or the channel went down at `wall` (the first loss counts until a subscription).
    mutating func lost(at wall: Double) {
        if lostAt == nil { lostAt = wall }
    }

    mutating func plan(leaveAt t: Double) { plannedLeave = t }

    /// Stops sharing, as of the intended time `t` (−∞: at once, for whatever comes due later). True when it
    /// was online (its GPS stops); one that never arrived never will.
    mutating func leave(at t: Double = -.infinity) -> Bool {
        switch state {
        case .online(let since):
            state = .leaving(since: since, at: Swift.min(t, plannedLeave))
            return true
        case .waiting: state = .gone
        case .leaving, .gone: break
        }
        return false
    }

    mutating func disconnect() { state = .gone }

    /// When it arrived, while it is online and sharing; nil otherwise.
    var onlineSince: Double? {
        if case .online(let since) = state { return since }
        return nil
    }

    /// When it arrived, if a tick intended at `intended` is one it shares: online and before its planned leave,
    /// or left at a later intended time (the tick came due first and runs late); nil otherwise.
    func sharing(at intended: Double) -> Double? {
        switch state {
        case .online(let since): intended < plannedLeave ? since : nil
        case .leaving(let since, let at): intended < at ? since : nil
        case .waiting, .gone: nil
        }
    }

    /// Online or leaving: what arrives is still received, a refused channel is joined again.
    var isReceiving: Bool {
        switch state {
        case .online, .leaving: true
        case .waiting, .gone: false
        }
    }

    var isGone: Bool {
        if case .gone = state { return true }
        return false
    }

    /// It lost its connection or channel and has not subscribed again yet.
    var awaitingComeback: Bool { lostAt != nil }

    /// Arrived and never got its Realtime subscription.
    var neverSubscribed: Bool { joined && !subscribed }
}
