@testable import ConvoyFleet
import ConvoyWire
import Foundation
import Synchronization
import Testing

/// Survale's direct messages go between any two members of an operation (issue 47, item 2), not only between a member
/// and its case agent: each member's partners are all its teammates, a pair's channel is named for the two in order,
/// and nobody outside the operation is anyone's partner. A probe's `{{<role>.dm_case_agent}}` names a member's channel
/// with its case agent, as the phones name it.
@Suite struct SurvaleDirectPartnersTests {
    static let (agent, b, c, other) = ("c0000000-0000-4000-8000-000000000000", "b0000000-0000-4000-8000-000000000000",
                                       "a0000000-0000-4000-8000-000000000000", "d0000000-0000-4000-8000-000000000000")
    static let otherMember = "e0000000-0000-4000-8000-000000000000"

    static func app() -> SurvaleApp {
        let app = SurvaleApp()
        app.members.withLock { m in
            m[agent] = .init(operation: "op1", callsign: "A-1", caseAgent: true)
            m[b] = .init(operation: "op1", callsign: "A-2")
            m[c] = .init(operation: "op1", callsign: "A-3")
            m[other] = .init(operation: "op2", callsign: "B-1", caseAgent: true)
            m[otherMember] = .init(operation: "op2", callsign: "B-2")
        }
        return app
    }

    @Test func anyTwoMembersOfAnOperationArePartners() throws {
        let app = Self.app()
        // Two members who are not the case agent: each the other's partner, on one channel whichever side opens it.
        #expect(app.directPartners(of: Self.b) == [Self.c, Self.agent].sorted())
        #expect(app.directPartners(of: Self.agent) == [Self.b, Self.c].sorted())
        let fromB = try #require(app.directChannel(for: Self.b, with: Self.c))
        let fromC = try #require(app.directChannel(for: Self.c, with: Self.b))
        #expect(fromB.topic == fromC.topic && fromB.topic == "realtime:op_op1_dm_\(Self.c)_\(Self.b)" && fromB.options.isPrivate)
        // The control: another operation's case agent is nobody's partner here, and has none here.
        #expect(!app.directPartners(of: Self.b).contains(Self.other) && app.directChannel(for: Self.b, with: Self.other) == nil)
        #expect(app.directPartners(of: Self.other) == [Self.otherMember] && app.directPartners(of: Self.otherMember) == [Self.other])
    }

    @Test func aProbeNamesAMembersChannelWithItsCaseAgent() {
        let values = Self.app().probeValues(roles: ["attacker": Self.b, "friend": Self.agent, "victim": Self.other])
        #expect(values["attacker.dm_case_agent"] == "op_op1_dm_\(Self.b)_\(Self.agent)")
        // The case agents themselves have none.
        #expect(values["friend.dm_case_agent"] == nil && values["victim.dm_case_agent"] == nil)
    }
}
