@testable import ConvoyFleet
import ConvoyGeo
import Testing
@testable import ConvoyFuzz

/// The invariants can fail: each helper the targets share, given what a broken parser would hand it, says so.
@Suite struct FuzzInvariantTests {
    @Test func aPointOffTheEarthIsBroken() {
        var inv = Invariants()
        FuzzGeo.onEarth(GeoPoint(lat: 45, lon: 7), "a point", &inv)
        #expect(inv.broken.isEmpty)
        for bad in [GeoPoint(lat: 90.5, lon: 0), GeoPoint(lat: 0, lon: -181), GeoPoint(lat: .nan, lon: 0), GeoPoint(lat: 0, lon: .infinity)] {
            var inv = Invariants()
            FuzzGeo.onEarth(bad, "a point", &inv)
            #expect(inv.broken.count == 1, "\(bad)")
        }
    }

    @Test func anErrorThatDoesNotPlaceItselfIsBroken() {
        let text = "a: 1\nb: 2\n"
        func broken(_ e: ScenarioError) -> Int {
            var inv = Invariants()
            FuzzYAML.placed(e, in: text, &inv)
            return inv.broken.count
        }
        #expect(broken(ScenarioError(file: "fuzz.yaml", line: 2, column: 1, path: "b", message: "unknown key")) == 0)
        #expect(broken(ScenarioError(file: "other.yaml", line: 2, column: 1, path: "b", message: "unknown key")) == 1)
        #expect(broken(ScenarioError(file: "fuzz.yaml", line: 40, column: 1, path: "b", message: "unknown key")) == 1)
        #expect(broken(ScenarioError(file: "fuzz.yaml", line: 2, column: 1, path: "b", message: "")) == 1)
    }

    @Test func statusCodesAreReadInOrder() {
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 431 Request Header Fields Too Large\r\n\r\n".utf8)
        #expect(FuzzHTTP.statusCodes(answer) == [200, 431])
        #expect(FuzzHTTP.statusCodes(Array("HTTP/1.1 2x0 OK\r\n".utf8)) == [-1])
        #expect(FuzzHTTP.statusCodes([]) == [])
    }

    @Test func aBase64URLSegmentIsDecodedAsJWTKitReadsIt() {
        #expect(FuzzJWT.decode("eyJhIjoxfQ") == Array(#"{"a":1}"#.utf8))
        #expect(FuzzJWT.decode("eyJhIjoxfQ==") == Array(#"{"a":1}"#.utf8))
        #expect(FuzzJWT.decode("e=yJ") == nil)
        #expect(FuzzJWT.decode("!!!!") == nil)
    }
}
