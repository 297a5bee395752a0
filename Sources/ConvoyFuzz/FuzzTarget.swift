/// One untrusted input format with its parser's own invariants: what `convoy-fuzz` runs under libFuzzer
/// (`make fuzz`, docs/fuzzing.md) and what `FuzzCorpusTests` replays in `make test`, over the seed corpus
/// (`Fuzz/Corpus/<name>/`) and every reproducer a run found (`Tests/ConvoyFuzzTests/Fuzz/<name>/`).
///
/// `check` never traps on bad input: it says whether the parser accepted the input and what it saw broken (nothing
/// when the input was refused cleanly, or read with every invariant holding), so a test can name the file and the
/// fuzzer can stop. A seed corpus holds inputs of both kinds, so each invariant had its chance.
public struct FuzzTarget: Sendable {
    public let name: String
    /// What is read and what is asserted, in a line (`convoy-fuzz --list`, docs/fuzzing.md).
    public let summary: String
    public let check: @Sendable (UnsafeRawBufferPointer) -> Invariants
    /// What the target sets up once (a server, a token check) before the first input: `convoy-fuzz` runs it before
    /// libFuzzer's driver, so what it allocates for the whole run (NIO's thread pools) is no input's leak.
    public let prepare: @Sendable () -> Void

    init(name: String, summary: String, prepare: @escaping @Sendable () -> Void = {},
         check: @escaping @Sendable (UnsafeRawBufferPointer) -> Invariants) {
        (self.name, self.summary, self.prepare, self.check) = (name, summary, prepare, check)
    }

    public func check(_ bytes: [UInt8]) -> Invariants {
        bytes.withUnsafeBytes { check($0) }
    }
}

public enum FuzzTargets {
    /// Every target, in the order `make fuzz` runs them.
    public static let all: [FuzzTarget] = [
        FuzzJSON.target, FuzzPhoenix.target, FuzzWebSocket.target, FuzzJWT.target,
        FuzzGeo.gpx, FuzzGeo.nmea, FuzzGeo.gpsd,
        FuzzYAML.scenario, FuzzYAML.probes, FuzzYAML.app,
        FuzzSQL.target, FuzzHTTP.target,
    ]

    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// What one input came to: accepted by the parser or refused, and the invariants that failed (`expect`), never a trap.
public struct Invariants: Sendable {
    public internal(set) var accepted = false
    public private(set) var broken: [String] = []

    mutating func expect(_ condition: Bool, _ what: @autoclosure () -> String) {
        if !condition { broken.append(what()) }
    }
}

extension UnsafeRawBufferPointer {
    /// The input as text, invalid UTF-8 repaired (what a reader of `String(decoding:as:)` sees).
    var text: String { String(decoding: self, as: UTF8.self) }
    var array: [UInt8] { Array(self) }
}
