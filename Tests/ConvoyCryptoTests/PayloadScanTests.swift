import Testing

@testable import ConvoyCrypto

/// A payload read straight from its bytes (`LocationPayload.scanned`) is what `JSONDecoder` reads; what
/// the scan does not take (a missing, repeated or mistyped key) it leaves to the decoder and its errors.
@Suite struct PayloadScanTests {
    static func both(_ text: String) throws -> (scanned: LocationPayload?, decoded: LocationPayload?) {
        let bytes = Array(text.utf8)
        let scanned = bytes.withUnsafeBufferPointer { LocationPayload.scanned($0) }
        return (scanned, try? LocationPayload.decoded(bytes))
    }

    @Test(arguments: [
        #"{"lat":51.5,"lon":-0.12,"ts":1764000000,"acc":5}"#,
        #"{"lat":51.5,"lon":-0.12,"ts":1764000000.25,"acc":5.5,"seq":7,"sent_ns":1764000000123456789,"fix":"reduced"}"#,
        #"{ "acc" : 1e1 , "ts":0, "lon":1E-2, "lat":-0.0, "extra":[1,{"a":null}], "fix":null, "seq":null }"#,
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"fix":"gps","sent_ns":-5}"#,
    ])
    func whatTheScanReadsTheDecoderReadsAlike(text: String) throws {
        let (scanned, decoded) = try Self.both(text)
        let s = try #require(scanned)
        #expect(s == decoded)
        #expect(try LocationPayload(jsonBytes: Array(text.utf8)) == s)
    }

    @Test(arguments: [
        #"{"lat":1,"lon":2,"ts":3}"#,                         // acc missing
        #"{"lat":1,"lon":2,"ts":3,"acc":"4"}"#,               // a string
        #"{"lat":1,"lon":2,"ts":3,"acc":null}"#,
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"seq":1.5}"#,       // a fraction for an integer
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"seq":-1}"#,
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"fix":7}"#,
        #"{"lat":1,"lat":9,"lon":2,"ts":3,"acc":4}"#,         // repeated
        #"{"lat":1e999,"lon":2,"ts":3,"acc":4}"#,
        #"[1,2,3,4]"#,
        #"{"lat":1,"lon":2,"ts":3,"acc":4"#,
    ])
    func whatTheScanDoesNotTakeGoesToTheDecoder(text: String) throws {
        let (scanned, _) = try Self.both(text)
        #expect(scanned == nil)
    }
}
