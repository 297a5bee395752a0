@testable import ConvoyFleet
import ConvoyMetrics
import Testing

/// A phone's catch-up of its group's chat after a gap, without a backend: what it owes itself across losses,
/// comebacks and failed passes, how it pages, how Survale reads a row, and how the accounting closes.
@Suite struct ChatCatchUpTests {
    @Test func nothingIsOwedBeforeTheChatChannelWasEverSubscribed() {
        var chat = MissedChat()
        chat.lost(at: 10)
        let from = chat.subscribed()
        #expect(!chat.isOwed && from == nil, "a phone still joining has missed nothing yet")
        chat.lost(at: 20)
        #expect(chat.owedSince == 20)
    }

    @Test func aComebackLoadsFromTheFirstLossAndAPassThatSucceedsClearsTheDebt() {
        var chat = MissedChat()
        _ = chat.subscribed()
        chat.lost(at: 50)
        chat.lost(at: 55)
        let from = chat.subscribed()
        #expect(from == 50 && chat.running && chat.isOwed, "from the older of two losses before the comeback")
        let next = chat.passEnded(ok: true)
        #expect(next == nil && !chat.isOwed && !chat.running)
    }

    @Test func aFailedPassKeepsTheDebtForARetryOrTheNextComeback() {
        var chat = MissedChat()
        _ = chat.subscribed()
        chat.lost(at: 100)
        let from = chat.subscribed()
        let next = chat.passEnded(ok: false)
        #expect(from == 100 && next == nil && chat.owedSince == 100 && !chat.running)
        let retry = chat.start()
        #expect(retry == 100, "a retry loads from the same point")
        _ = chat.passEnded(ok: true)
        #expect(!chat.isOwed)
    }

    @Test func aLossDuringAPassKeepsTheDebtAndAComebackDuringItAsksForAnother() {
        var chat = MissedChat()
        _ = chat.subscribed()
        chat.lost(at: 100)
        let first = chat.subscribed()
        // The network goes again while the pass reads: what is posted from then on is not in it.
        chat.lost(at: 130)
        #expect(first == 100 && chat.owedSince == 100)
        // Back while the first pass still runs: no second pass at once, one after it.
        let meanwhile = chat.subscribed()
        let second = chat.passEnded(ok: true)
        #expect(meanwhile == nil && second == 100 && chat.running, "the pass succeeded but the phone lost the channel meanwhile")
        let after = chat.passEnded(ok: true)
        #expect(after == nil && !chat.isOwed)
    }

    @Test(arguments: [(rows: [3, 3, 1], pages: 3), (rows: [3, 3, 0], pages: 3), (rows: [2], pages: 1)])
    func pagesRunUntilAShortPage(rows: [Int], pages: Int) {
        var pager = ChatPager(size: 3)
        var read = 0, id: Int64 = 40
        for n in rows {
            id += Int64(n)
            read += 1
            guard pager.advance(rows: n, to: id) else { break }
        }
        #expect(read == pages && pager.pages == pages && pager.cursor == id)
    }

    @Test func aFullPageThatDoesNotMoveTheCursorEndsThePass() {
        var pager = ChatPager(size: 2)
        let more = pager.advance(rows: 2, to: 7)
        let again = pager.advance(rows: 2, to: 7)
        #expect(more && pager.cursor == 7)
        #expect(!again, "the same page again would repeat for ever")
    }

    @Test func survaleReadsAStoredLineAndItsMedia() throws {
        let body = #"{"seq":7,"sent_ns":1700000000000000000,"text":"Convoy photo 7","kind":"photo","bytes":2048}"#
        let message = try #require(SurvaleApp.message(body: body, mediaPath: "op/abc-7-1.jpg"))
        #expect(message.seq == 7 && message.sentNanos == 1_700_000_000_000_000_000)
        #expect(message.media == MediaRef(kind: .photo, bytes: 2048, location: "op/abc-7-1.jpg"))
        let text = try #require(SurvaleApp.message(body: #"{"seq":8,"sent_ns":1,"text":"hi"}"#, mediaPath: nil))
        #expect(text.media == nil)
        #expect(SurvaleApp.message(body: "not a line", mediaPath: nil) == nil)
    }

    @Test func whatIsStillMissingAtTheEndIsLostNeverBackOrNotReceived() {
        let ledger = ChatLedger()
        // Member 1 heard line 1 live and loaded line 2 after a gap; member 2 went away at 150 and never came back;
        // member 3 was back, yet line 2 never reached it.
        ledger.posted(sender: 0, seq: 1, members: [1, 2, 3], at: 100)
        ledger.posted(sender: 0, seq: 2, members: [1, 2, 3], at: 200)
        ledger.delivered(sender: 0, seq: 1, by: 1, caughtUp: false)
        ledger.delivered(sender: 0, seq: 2, by: 1, caughtUp: true)
        ledger.delivered(sender: 0, seq: 1, by: 3, caughtUp: false)
        ledger.neverBack(2, since: 150)
        let c = ledger.close()
        #expect(c.expected == 6 && c.delivered == 3 && c.caughtUp == 1 && c.unexpected == 0)
        #expect(c.lost == ["not_received": 2, "never_back": 1], "member 2 missed line 1 before its last gap: not_received")
        var r = MediaReport()
        (r.expected, r.delivered, r.caughtUp, r.lost) = (c.expected, c.delivered, c.caughtUp, c.lost)
        #expect(r.closes && r.line(expecting: "receipts").contains("6 receipts expected: 3 delivered (1 after a gap), 3 lost"), "\(r.line)")
    }
}
