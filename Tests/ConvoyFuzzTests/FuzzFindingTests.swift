import ConvoySodium
import Foundation
import Testing
@testable import ConvoyFuzz

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
}
