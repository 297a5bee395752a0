import Foundation

extension Scenario {
    /// The scenario at `devices` phones (`--devices`): each group in its share of the file's fleet (rounding handed to
    /// the largest groups first, at least one each), and the communities in proportion, so that a community keeps the
    /// size the file gave it and a phone the friends it was to have (city-10k's 100 communities at 200 phones would leave
    /// two phones in each, one friend apiece, and a third of the planned rate). What scaling changed beyond the counts
    /// is said in `notes`. Nil when there are fewer devices than groups.
    public func scaled(to devices: Int) -> (scenario: Scenario, notes: [String])? {
        guard devices >= groups.count, !groups.isEmpty else { return nil }
        var s = self
        let total = Double(deviceCount)
        var counts = groups.map { max(1, Int((Double($0.count) * Double(devices) / total).rounded(.down))) }
        var order = Array(groups.indices).sorted { groups[$0].count > groups[$1].count }
        while counts.reduce(0, +) < devices, let i = order.first {
            counts[i] += 1
            order.append(order.removeFirst())
        }
        while counts.reduce(0, +) > devices, let i = counts.indices.max(by: { counts[$0] < counts[$1] }) { counts[i] -= 1 }
        for i in groups.indices { s.groups[i].count = counts[i] }
        var notes: [String] = []
        let before = social.communities
        if before > 1, social.groups == nil {
            let after = max(1, min(devices, Int((Double(before) * Double(devices) / total).rounded())))
            if after != before {
                s.social.communities = after
                notes.append("--devices \(devices): social.communities scaled with the fleet, \(before) → \(after) "
                             + "(about \(Int((Double(devices) / Double(after)).rounded())) phones each, as the file's \(Int((total / Double(before)).rounded())))")
            }
        }
        return (s, notes)
    }
}
