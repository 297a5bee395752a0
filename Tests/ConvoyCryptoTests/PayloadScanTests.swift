import Testing

@testable import ConvoyCrypto
import ConvoySodium

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
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"heading":271.5,"speed":13.9}"#,
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"heading":null,"speed":0}"#,
    ])
    func whatTheScanReadsTheDecoderReadsAlike(text: String) throws {
        let (scanned, decoded) = try Self.both(text)
        let s = try #require(scanned)
        #expect(s == decoded)
        #expect(try LocationPayload(jsonBytes: Array(text.utf8)) == s)
    }

    /// A moving fix's heading and speed (Survale's markers rotate with it) go out and come back as they were; out of range, refused by name.
    @Test func headingAndSpeedRoundTripAndOutOfRangeIsRefusedByName() throws {
        var p = LocationPayload(lat: 34.05, lon: -118.25, ts: 1_764_000_000, acc: 8, seq: 3, sentNanos: 1)
        (p.heading, p.speed) = (359.9, 12.4)
        let text = String(decoding: try p.jsonBytes(), as: UTF8.self)
        #expect(text.hasSuffix(#","heading":359.9,"speed":12.4}"#))
        #expect(try LocationPayload(jsonBytes: Array(text.utf8)) == p)
        for (key, bad) in [("heading", "360"), ("heading", "-1"), ("speed", "-0.5")] {
            let error = #expect(throws: CryptoError.self) {
                _ = try LocationPayload(jsonBytes: Array(#"{"lat":1,"lon":2,"ts":3,"acc":4,"\#(key)":\#(bad)}"#.utf8))
            }
            #expect(error == .outOfRange && error?.key == key, "\(key): \(bad)")
        }
        // Without them, what was sealed before is sealed byte for byte.
        #expect(String(decoding: try LocationPayload(lat: 1, lon: 2, ts: 3, acc: 4).jsonBytes(), as: UTF8.self) == #"{"lat":1,"lon":2,"ts":3,"acc":4}"#)
    }


    @Test(arguments: [
        #"{"lat":1,"lon":2,"ts":3}"#,                         // acc missing
        #"{"lat":1,"lon":2,"ts":3,"acc":"4"}"#,               // a string
        #"{"lat":1,"lon":2,"ts":3,"acc":null}"#,
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"seq":1.5}"#,       // a fraction for an integer
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"seq":-1}"#,
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"fix":7}"#,
        #"{"lat":1,"lon":2,"ts":3,"acc":4,"heading":"north"}"#,
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
