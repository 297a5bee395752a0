@testable import ConvoyFleet
import Testing

/// Each delivery shape's room decides in its state type and returns what the phone must do (issue 46, part 1, item 3):
/// these are those decisions, with no phone, server or clock.
@Suite struct ShapeRoomTests {
    // MARK: Pairwise: the catch-up after a gap

    /// One comeback, one pass that reads everything: caught up, nothing owed.
    @Test func aCatchUpThatReadsEverythingIsDone() {
        var s = PairwiseState()
        let r1 = s.owe(since: 100)
        #expect(r1 == 100)
        #expect(!s.isSettled)
        let r2 = s.passEnded(read: true)
        #expect(r2 == .done)
        #expect(s.owedSince == nil && !s.backfilling && s.isSettled)
    }

    /// A comeback while a pass runs starts none of its own: the running pass goes once more, from the earliest owed.
    @Test func aComebackDuringAPassMakesItGoAgainFromTheEarliest() {
        var s = PairwiseState()
        let r3 = s.owe(since: 100)
        #expect(r3 == 100)
        let r4 = s.owe(since: 130)
        #expect(r4 == nil)
        let r5 = s.owe(since: 90)
        #expect(r5 == nil)
        let r6 = s.passEnded(read: true) == .again(from: 90)
        #expect(r6)
        #expect(s.backfilling)
        let r7 = s.passEnded(read: true)
        #expect(r7 == .done)
        #expect(s.owedSince == nil && !s.backfilling)
    }

    /// A pass that could not read a page keeps what is owed for later, and lets the next comeback start a pass.
    @Test func aFailedPassKeepsWhatIsOwed() {
        var s = PairwiseState()
        _ = s.owe(since: 100)
        let r8 = s.passEnded(read: false) == .retryLater(since: 100)
        #expect(r8)
        #expect(s.owedSince == 100 && !s.backfilling && !s.isSettled)
        let r9 = s.owe(since: 150)
        #expect(r9 == 100)
    }

    /// A phone gone mid-pass stops; what was owed stays owed.
    @Test func aGonePhoneStopsCatchingUp() {
        var s = PairwiseState()
        _ = s.owe(since: 100)
        _ = s.owe(since: 120)
        let r10 = s.passEnded(read: true) == .again(from: 100)
        #expect(r10)
        s.stopCatchingUp()
        #expect(!s.backfilling && s.owedSince == 100)
    }

    // MARK: Group: replies to broadcasts, the group's end, join requests

    static func group(owner: Bool) -> GroupState {
        var role = GroupRole(owner: owner, abandons: false)
        role.approveAfter = 2...4
        return GroupState(role: role, chatRetry: .init(), seed: 1)
    }

    /// An ack times the broadcast once; a timeout names the ledger entry that never left; a second reply is nothing.
    @Test func pushRepliesAreTakenOnce() {
        var g = Self.group(owner: false)
        g.awaitingAck["1"] = (sent: 10, entry: 0)
        g.awaitingAck["2"] = (sent: 11, entry: 1)
        g.awaitingAck["3"] = (sent: 12, entry: 2)
        let r11 = g.replied(ref: "1", status: "ok") == .acknowledged(sentAt: 10)
        #expect(r11)
        let r12 = g.replied(ref: "1", status: "ok")
        #expect(r12 == .unknown)
        let r13 = g.replied(ref: "2", status: "timeout") == .notJoined(entry: 1)
        #expect(r13)
        let r14 = g.replied(ref: "3", status: "error")
        #expect(r14 == .other)
        let r15 = g.replied(ref: "9", status: "ok")
        #expect(r15 == .unknown)
        #expect(g.awaitingAck.isEmpty)
    }

    /// The end is seen once, and an ended group's owner decides no request.
    @Test func theEndIsSeenOnceAndEndsDeciding() {
        var g = Self.group(owner: true)
        let r16 = g.heard(joinRequest: "a")
        #expect(r16 == 2...4)
        let r17 = g.sawEnd()
        #expect(r17)
        let r18 = g.sawEnd()
        #expect(!r18)
        let r19 = g.heard(joinRequest: "b")
        #expect(r19 == nil)
    }

    /// An owner decides each request once; a member decides none.
    @Test func onlyTheOwnerDecidesEachRequestOnce() {
        var owner = Self.group(owner: true)
        let r20 = owner.heard(joinRequest: "a")
        #expect(r20 == 2...4)
        let r21 = owner.heard(joinRequest: "a")
        #expect(r21 == nil)
        let r22 = owner.heard(joinRequest: "b")
        #expect(r22 == 2...4)
        #expect(owner.deciding == ["a", "b"])
        var member = Self.group(owner: false)
        let r23 = member.heard(joinRequest: "a")
        #expect(r23 == nil)
        #expect(member.deciding.isEmpty)
    }

    // MARK: Mailbox: a fetched message, its acknowledgement, the poll

    /// New → shown → acknowledged: each fetch of the same message is told apart; one the backend had deleted already
    /// (a 404 on the ack) is not counted if served again.
    @Test func aFetchedMessageIsShownOnceAndAcknowledged() {
        var m = MailboxState()
        #expect(m.fetched("x") == .new)
        m.show("x")
        #expect(m.fetched("x") == .shownNotAcknowledged)
        m.acknowledged("x")
        #expect(m.fetched("x") == .servedAfterAck)
        m.show("y")
        m.acknowledged("y", gone: true)
        #expect(m.fetched("y") == .new)
        #expect(m.shown.isEmpty && m.acked == ["x"])
    }

    /// Polls do not overlap; a full page asks again at once, up to ten pages a poll; a failure or a short page stops.
    @Test func pollsDrainFullPagesAndNeverOverlap() {
        var m = MailboxState()
        let r24 = m.startPoll()
        #expect(r24)
        let r25 = m.startPoll()
        #expect(!r25)
        m.endPoll()
        let r26 = m.startPoll()
        #expect(r26)
        #expect(MailboxState.fetchAgain(after: 1, returned: 50, page: 50))
        #expect(MailboxState.fetchAgain(after: 9, returned: 50, page: 50))
        #expect(!MailboxState.fetchAgain(after: 10, returned: 50, page: 50))
        #expect(!MailboxState.fetchAgain(after: 1, returned: 49, page: 50))
        #expect(!MailboxState.fetchAgain(after: 1, returned: nil, page: 50))
    }

    // MARK: The phone holds one shape

    /// A phone's shape state is its app's shape, and only that one.
    @Test func aPhoneHoldsItsAppsShapeOnly() {
        for name in Apps.names {
            let app = Apps.make(name)!
            let state = ShapeState(for: app, role: nil, chatRetry: .init(), seed: 1)
            #expect(state.kind == app.shape, "\(name)")
            switch (state, app.shaped) {
            case (.pairwise, .pairwise), (.group, .group), (.mailbox, .mailbox): break
            default: Issue.record("\(name): its phone's state is not its app's shape")
            }
        }
    }
}
