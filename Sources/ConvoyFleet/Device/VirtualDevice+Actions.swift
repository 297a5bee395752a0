import ConvoyGeo
import ConvoyMetrics
import ConvoyWire

/// The phone's side of `AppAction`s: each it makes (its share drawn from its seed) at a random phase of its cadence
/// from the moment it is online, then every `every`, while it is online; timed, counted, and charged to the battery.
extension VirtualDevice {
    func scheduleActions(from intended: Double) {
        guard !context.actions.isEmpty else { return }
        for (i, action) in context.actions.enumerated() {
            // Drawn for every action, so that one action's share does not move another's phones.
            let chosen = actionDraws.uniform() < action.share
            let phase = actionDraws.uniform(0, action.every.upperBound)
            guard chosen else { continue }
            context.scheduler.at(intended + phase) { [weak self] t in await self?.act(i, intended: t) }
        }
    }

    func act(_ i: Int, intended: Double) async {
        guard life.sharing(at: intended) != nil else { return }
        let action = context.actions[i]
        actionsMade[i, default: 0] += 1
        let started = context.clock.now()
        do {
            let outcome = try await action.perform(account.session, actionsMade[i] ?? 1, http)
            let took = context.clock.now() - started
            metrics.count(.httpRequests, by: outcome.requests)
            spendHTTP(body: outcome.bytes, response: 300 * outcome.requests, requests: outcome.requests, since: started)
            if outcome.acted {
                metrics.record(HistogramName.declared(action.name), seconds: took)
                metrics.count(CounterName.declared("actions.\(action.name)"))
            } else {
                metrics.count(CounterName.declared("action_skipped.\(action.name)"))
            }
        } catch {
            metrics.count(.httpRequests)
            spendHTTP(body: 0, since: started)
            _ = countFailure(error, operation: action.name)
            metrics.count(CounterName.declared("action_failures.\(action.name)"))
        }
        let next = intended + actionDraws.uniform(action.every.lowerBound, action.every.upperBound)
        context.scheduler.at(next) { [weak self] t in await self?.act(i, intended: t) }
    }
}
