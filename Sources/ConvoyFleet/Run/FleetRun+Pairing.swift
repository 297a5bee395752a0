import ConvoyGeo
import Logging

/// Pairing during the run (`FriendApp.pairsDuringRun`): each phone's plan from
/// the social graph, and the decide-later requests the run has accepted later.
extension FleetRun {
    /// Each device's requests and answers, as `graph` says, with the preferences of `preference` and the
    /// think times of `options` (`pairingAskAfter`, `pairingAcceptAfter`), drawn per pair.
    static func pairings(_ graph: SocialGraph, userIDs: [String], emails: [String] = [], preference: (Int, Int) -> String, seed: UInt64,
                         options: DeviceOptions) -> [DevicePairing] {
        let (askAfter, acceptAfter) = (options.pairingAskAfter, options.pairingAcceptAfter)
        var plans = [DevicePairing](repeating: DevicePairing(), count: userIDs.count)
        var rng = SeededGenerator(seed: seed, stream: 0x9A1E)
        for p in graph.pairs {
            plans[p.inviter].requests.append(.init(index: p.invitee, userID: userIDs[p.invitee], email: emails.isEmpty ? "" : emails[p.invitee],
                                                   preference: preference(p.inviter, p.invitee),
                                                   after: rng.uniform(askAfter.lowerBound, askAfter.upperBound), decidedLater: p.pending))
            let delay = rng.uniform(acceptAfter.lowerBound, acceptAfter.upperBound)
            plans[p.invitee].answers[userIDs[p.inviter]] = .init(index: p.inviter, preference: preference(p.invitee, p.inviter),
                                                                  delay: p.pending ? nil : delay, declines: p.declined)
        }
        return plans
    }

    /// Has a seeded `social.accept_later` share of the decide-later requests accepted at seeded times in the steady part.
    func scheduleLaterAcceptances(_ graph: SocialGraph, devices: [VirtualDevice?], userIDs: [String], steadyStart: Double,
                                  scheduler: Scheduler) {
        let scenario = configuration.scenario
        guard scenario.social.acceptLater > 0 else { return }
        var rng = SeededGenerator(seed: scenario.seed, stream: 0xACCE)
        var count = 0
        for p in graph.pairs where p.pending && rng.chance(scenario.social.acceptLater) {
            let window = scenario.social.acceptLaterAt ?? 0...scenario.timeline.steady
            let at = steadyStart + rng.uniform(window.lowerBound, window.upperBound)
            // A steady part shortened (--duration) below the window: those acceptances do not come.
            guard at <= steadyStart + scenario.timeline.steady else { continue }
            guard let invitee = devices[p.invitee] else { continue }
            let inviter = userIDs[p.inviter]
            scheduler.at(at) { _ in await invitee.acceptLater(from: inviter) }
            count += 1
        }
        logger.info("pairing: \(count) decide-later requests will be accepted during the steady part")
    }
}
