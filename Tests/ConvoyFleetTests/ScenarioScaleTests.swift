@testable import ConvoyFleet
import Foundation
import Testing

/// `--devices N` (`Scenario.scaled`): the groups keep their proportions and the communities scale with the fleet, so
/// a phone keeps the friends the file gave it; what scaling changed is said.
@Suite struct ScenarioScaleTests {
    static let city = AppFileTests.root.appendingPathComponent("scenarios/city-10k.yaml").path

    /// The mean friends a phone has in `s`'s graph.
    static func meanFriends(_ s: Scenario) -> Double {
        let graph = SocialGraph(devices: s.deviceCount, social: s.social, seed: s.seed)
        return Double(graph.pairs.count * 2) / Double(s.deviceCount)
    }

    @Test func city10kAt200PhonesKeepsItsFriendsAndSaysWhatScalingDid() throws {
        let city = try ScenarioFile.load(Self.city)
        let scaled = try #require(city.scaled(to: 200))
        #expect(scaled.scenario.deviceCount == 200 && scaled.scenario.groups.map(\.count) == [80, 40, 60, 20])
        #expect(scaled.scenario.social.communities == 2)
        #expect(scaled.notes == ["--devices 200: social.communities scaled with the fleet, 100 → 2 (about 100 phones each, as the file's 100)"])
        // The friends a phone has stay near the file's; with the file's 100 communities of two phones, one apiece.
        let full = Self.meanFriends(city), kept = Self.meanFriends(scaled.scenario)
        var unscaled = scaled.scenario
        unscaled.social.communities = city.social.communities
        #expect(abs(kept - full) < 0.5 && Self.meanFriends(unscaled) <= 1, "\(full) in the file, \(kept) scaled, \(Self.meanFriends(unscaled)) unscaled")
    }

    @Test func aFleetAtItsOwnSizeOrOneCommunityIsLeftAlone() throws {
        let city = try ScenarioFile.load(Self.city)
        let same = try #require(city.scaled(to: city.deviceCount))
        #expect(same.scenario.social.communities == 100 && same.notes.isEmpty)
        var one = city
        one.social.communities = 1
        #expect(one.scaled(to: 200)?.notes.isEmpty == true && one.scaled(to: 200)?.scenario.social.communities == 1)
        #expect(city.scaled(to: 3) == nil, "fewer devices than groups")
    }
}
