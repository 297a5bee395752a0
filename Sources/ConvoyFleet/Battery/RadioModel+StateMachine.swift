extension RadioModel {
    /// The RRC state machine: idle since some time, or busy until some time
    /// and then in the tail from a given stage. Times only move forward: a
    /// transfer asked for while the radio is still busy queues behind it.
    struct StateMachine: Sendable {
        private enum State: Sendable {
            case idle(since: Double)
            /// Promoting or transferring until `busyUntil`; then the tail from stage `stage`.
            case connected(busyUntil: Double, stage: Int)
        }

        private var state: State

        init(idleSince start: Double) { state = .idle(since: start) }

        mutating func transfer(at time: Double, up: Int, down: Int, lasting: Double = 0, profile: RadioProfile, energy: inout RadioEnergy) {
            let onAir = profile.transferSeconds(up: up, down: down)
            // Waiting for the other end with the radio connected (a round trip longer than the bytes take).
            let waiting = max(0, lasting - onAir)
            let seconds = onAir + waiting
            var start = time
            switch state {
            case .idle(let since):
                start = promote(at: time, idleSince: since, profile: profile, energy: &energy)
            case .connected(let busyUntil, let stage):
                if time <= busyUntil {
                    start = busyUntil
                    break
                }
                let gap = time - busyUntil
                guard gap < profile.tailSeconds(from: stage) else {
                    let tail = profile.tailSeconds(from: stage)
                    energy.tail += Self.tailJoules(from: stage, for: tail, profile: profile)
                    start = promote(at: time, idleSince: busyUntil + tail, profile: profile, energy: &energy)
                    break
                }
                energy.tail += Self.tailJoules(from: stage, for: gap, profile: profile)
                let current = Self.stage(from: stage, after: gap, profile: profile)
                let tail = profile.tail[current]
                if let small = tail.smallTransfer, up <= small.up, down <= small.down {
                    // Carried in this stage at its power; its timer restarts.
                    energy.transfer += tail.power * seconds
                    state = .connected(busyUntil: time + seconds, stage: current)
                    return
                }
                if let promotion = tail.promotion {
                    energy.promotion += promotion.joules
                    start = time + promotion.seconds
                }
            }
            energy.transfer += profile.transferJoules(up: up, down: down) + waiting * (profile.tail.first?.power ?? 0)
            state = .connected(busyUntil: start + seconds, stage: 0)
        }

        /// Adds the idle time up to `time` and the promotion; returns when the transfer starts.
        private func promote(at time: Double, idleSince: Double, profile: RadioProfile, energy: inout RadioEnergy) -> Double {
            let idle = max(0, time - idleSince)
            energy.idle += profile.idlePower * idle
            energy.idleSeconds += idle
            energy.promotion += profile.promotion.joules
            return max(time, idleSince) + profile.promotion.seconds
        }

        /// The open state's energy up to `time`, as if nothing more is sent.
        func close(at time: Double, profile: RadioProfile, energy: inout RadioEnergy) {
            switch state {
            case .idle(let since):
                let idle = max(0, time - since)
                energy.idle += profile.idlePower * idle
                energy.idleSeconds += idle
            case .connected(let busyUntil, let stage):
                let gap = max(0, time - busyUntil)
                let tail = profile.tailSeconds(from: stage)
                energy.tail += Self.tailJoules(from: stage, for: min(gap, tail), profile: profile)
                let idle = max(0, gap - tail)
                energy.idle += profile.idlePower * idle
                energy.idleSeconds += idle
            }
        }

        func phase(at time: Double, profile: RadioProfile) -> RadioPhase {
            switch state {
            case .idle: return .idle
            case .connected(let busyUntil, let stage):
                if time < busyUntil { return .busy }
                let gap = time - busyUntil
                if gap >= profile.tailSeconds(from: stage) { return .idle }
                return .tail(profile.tail[Self.stage(from: stage, after: gap, profile: profile)].name)
            }
        }

        /// Joules of `seconds` of tail starting at stage `from` (seconds < the tail's length from there).
        private static func tailJoules(from first: Int, for seconds: Double, profile: RadioProfile) -> Double {
            var left = seconds, joules = 0.0
            for stage in profile.tail[first...] where left > 0 {
                let here = min(left, stage.seconds)
                joules += here * stage.power
                left -= here
            }
            return joules
        }

        /// The stage the radio is in `gap` seconds into the tail that began at stage `first`.
        private static func stage(from first: Int, after gap: Double, profile: RadioProfile) -> Int {
            var end = 0.0
            for i in first..<profile.tail.count {
                end += profile.tail[i].seconds
                if gap < end { return i }
            }
            return profile.tail.count - 1
        }
    }
}
