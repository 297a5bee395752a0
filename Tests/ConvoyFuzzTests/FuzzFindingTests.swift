import ConvoySodium
import Foundation
import Testing
@testable import ConvoyFuzz
@testable import ConvoyGeo

/// What the fuzz targets found, fixed, asserted through the target that found it (docs/fuzzing.md, "Findings").
/// The inputs are in Tests/ConvoyFuzzTests/Fuzz/<target>/, which FuzzCorpusTests also replays.
@Suite struct FuzzFindingTests {
    static func input(_ target: String, _ name: String) throws -> [UInt8] {
        let path = "\(FuzzCorpusTests.root)/Tests/ConvoyFuzzTests/Fuzz/\(target)/\(name)"
        return Array(try #require(FileManager.default.contents(atPath: path)))
    }

    static func check(_ target: String, _ bytes: [UInt8]) async throws -> Invariants {
        let t = try #require(FuzzTargets.named(target))
        return await withCheckedContinuation { done in Thread { done.resume(returning: t.check(bytes)) }.start() }
    }

    /// convoy serve took a token whose header says HS512 over an HS256 signature (jwt-kit verifies with the key it
    /// holds, whatever the header says); PostgREST and GoTrue refuse it. Now refused; the same claims under an
    /// HS256 header, signed the same way, are the control.
    @Test func aHeaderThatLiesAboutItsAlgorithmIsRefused() async throws {
        let token = String(decoding: try Self.input("jwt", "hs512-header-over-hs256-signature"), as: UTF8.self)
        let lying = try await Self.check("jwt", Array(token.utf8))
        #expect(!lying.accepted && lying.broken.isEmpty)
        let parts = token.split(separator: ".").map(String.init)
        func base64url(_ bytes: [UInt8]) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
        }
        let header = base64url(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let mac = base64url(try HMACSHA256.authenticate(Array("\(header).\(parts[1])".utf8), key: Array(FuzzJWT.secret.utf8)))
        let honest = try await Self.check("jwt", Array("\(header).\(parts[1]).\(mac)".utf8))
        #expect(honest.accepted && honest.broken.isEmpty)
    }

    /// The SQLite store read a policy naming a column its table does not have (and answered every request 500);
    /// now the store refuses it at start (MigrationsServerTests.aPolicySQLiteCannotRunIsRefusedAtStart).
    @Test func aPolicyOnAColumnThatIsNotThereIsRefused() async throws {
        let result = try await Self.check("sql", try Self.input("sql", "policy-unknown-column"))
        #expect(!result.accepted && result.broken.isEmpty)
    }

    /// libgps 3.22 never returned from `gps_unpack` on three lines (the gpsd target's timeouts: a line cut inside a
    /// string, one whose key lost its opening quote, a DEVICES list under an unknown name): a broken, hostile or newer
    /// gpsd hung the live source's thread at full CPU. Lines that are no JSON object, and classes Convoy does not read,
    /// now never reach libgps. The control: the same TPV whole is read as a fix.
    @Test(.timeLimit(.minutes(1))) func aGPSDLineThatIsNoJSONObjectIsSkippedNotSpunOn() async throws {
        let cutShort = try Self.input("gpsd", "line-cut-inside-a-string")
        let lines = cutShort.split(separator: UInt8(ascii: "\n")).map(Array.init)
        #expect(lines.count == 3 && !GPSDJSONCheck.isObject(lines[1]) && GPSDJSONCheck.isObject(lines[0]))
        let keyWithoutQuote = try Self.input("gpsd", "balanced-but-not-json")
        #expect(!GPSDJSONCheck.isObject(Array(keyWithoutQuote.split(separator: UInt8(ascii: "\n"))[0])))
        // Well-formed, but a DEVICES list under a name libgps does not know: it spun on that too. Only TPV and SKY,
        // the classes Convoy reads, reach libgps now.
        let unknownList = try Self.input("gpsd", "devices-list-under-an-unknown-name")
        let devices = Array(unknownList.split(separator: UInt8(ascii: "\n"))[1])
        #expect(GPSDJSONCheck.objectClass(devices) == "DEVICES" && GPSDLineReader().read(devices) == .other)
        #expect(GPSDJSONCheck.objectClass(Array(#"{"mode":3,"class":"TPV"}"#.utf8)) == "TPV")
        #expect(GPSDJSONCheck.objectClass(Array(#"{"a":{"class":"TPV"}}"#.utf8)) == "")
        // A TPV carrying a DEVICES list: libgps spun on that as well. Lists of objects reach it only as SKY's satellites.
        let tpvWithList = try Self.input("gpsd", "tpv-carrying-a-devices-list")
        #expect(!GPSDJSONCheck.isReadable(Array(tpvWithList.split(separator: UInt8(ascii: "\n"))[1])))
        #expect(GPSDJSONCheck.isReadable(Array(#"{"class":"SKY","hdop":1.1,"satellites":[{"PRN":3,"used":true}]}"#.utf8)))
        #expect(!GPSDJSONCheck.isReadable(Array(#"{"class":"SKY","satellites":[{"PRN":3,"x":[{"a":1}]}]}"#.utf8)))
        #expect(GPSDJSONCheck.isReadable(Array(#"{"class":"TPV","mode":3,"lat":1,"lon":2}"#.utf8)))
        for found in [cutShort, keyWithoutQuote, unknownList, tpvWithList] { #expect(try await Self.check("gpsd", found).broken.isEmpty) }
        let tpv = #"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"time":"2026-01-05T10:00:00.000Z","lat":46.05,"lon":14.5,"eph":4.2}"#
        let reader = GPSDLineReader()
        guard case .tpv(let report) = reader.read(Array(tpv.utf8)) else { Issue.record("the whole TPV was not read"); return }
        #expect(report.latitude == 46.05 && report.device == "/dev/ttyUSB0")
        for end in [tpv.count - 1, 40, 60] {
            #expect(reader.read(Array(tpv.utf8.prefix(end))) == .other, "cut at \(end)")
        }
        #expect(reader.read(Array(tpv.replacingOccurrences(of: #","eph""#, with: #","eph"#).utf8)) == .other)
        // The grammar, case by case.
        for (text, object) in [(#"{"a":[1,-2.5e+3,true,null,{"b":"\u00e9\n"}]}  "#, true), (#"{"a":[1}]"#, false), (#"{"a":1}x"#, false),
                               (#"{"a":01}"#, false), (#"{"a":"tab\there"}"#, true), ("{\"a\":\"raw\ttab\"}", false), (#"[1]"#, false),
                               (#"{"a":"}\"]"}"#, true), (#"{"a":tru}"#, false), (#"{"a":1,}"#, false)] {
            #expect(GPSDJSONCheck.isObject(Array(text.utf8)) == object, "\(text)")
        }
        let deep = String(repeating: #"{"a":"#, count: 17) + "1" + String(repeating: "}", count: 17)
        #expect(!GPSDJSONCheck.isObject(Array(deep.utf8)) && GPSDJSONCheck.isObject(Array(deep.dropFirst(5 * 2).dropLast(2).utf8)))
    }

    /// The app target took Convoy's line 44 of a file with lone CRs for a line past its end: YAML (and an editor)
    /// counts a lone CR as a line end, and the target counted LFs only. The target's count is now YAML's; Convoy's
    /// line was right. The control: the same text with its CRs as LFs has those lines by either count.
    @Test func aFileWithLoneCarriageReturnsIsPlacedByYAMLsLines() async throws {
        let found = try Self.input("app", "lone-carriage-returns")
        let text = String(decoding: found, as: UTF8.self)
        #expect(try await Self.check("app", found).broken.isEmpty)
        let lfs = text.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(FuzzYAML.yamlLines(text) > lfs)
        #expect(FuzzYAML.yamlLines(text.replacingOccurrences(of: "\r", with: "\n")) == FuzzYAML.yamlLines(text))
        #expect(FuzzYAML.yamlLines("a\r\nb\rc\nd\u{2028}e") == 5)
    }
}
