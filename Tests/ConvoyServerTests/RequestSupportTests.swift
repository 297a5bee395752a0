import Testing
@testable import ConvoyServer

/// How PostgREST's `Prefer` header is read (RFC 7240: comma-separated tokens, optional whitespace).
@Suite struct RequestSupportTests {
    @Test func preferTokensAcrossFieldsWithWhitespace() {
        let p = RequestSupport.preferences(["return=representation, count=exact", "\tresolution=merge-duplicates ,missing=default"])
        #expect(p == ["return": "representation", "count": "exact", "resolution": "merge-duplicates", "missing": "default"])
    }

    @Test func tokensWithoutAValueOrEmptyAreLeftOutAndALaterOneWins() {
        let p = RequestSupport.preferences(["handling=strict, tx, ,, =x, return=minimal", "return=representation"])
        #expect(p == ["handling": "strict", "return": "representation"])
    }

    @Test func aValueKeepsItsOwnEqualsSigns() {
        #expect(RequestSupport.preferences(["params=single-object=1"]) == ["params": "single-object=1"])
        #expect(RequestSupport.preferences([]) == [:])
    }
}
