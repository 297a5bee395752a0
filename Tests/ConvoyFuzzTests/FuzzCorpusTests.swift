import Foundation
import Testing
@testable import ConvoyFuzz

/// Every seed (`Fuzz/Corpus/<target>/`) and every reproducer a fuzz run found (`Tests/ConvoyFuzzTests/Fuzz/<target>/`)
/// holds its target's invariants: the targets themselves are built and run in `make test`, and a fixed finding
/// stays fixed.
@Suite struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The target's checks over its files, on a thread of its own (a check may wait for a task: never on the pool's).
    static func replay(_ target: FuzzTarget, _ files: [String]) async -> [String: Invariants] {
        await withCheckedContinuation { done in
            Thread {
                var results: [String: Invariants] = [:]
                for file in files { results[file] = target.check(Array(FileManager.default.contents(atPath: file) ?? Data())) }
                done.resume(returning: results)
            }.start()
        }
    }

    /// A minute at most: a parser that never returns on an input (libgps did, on a gpsd line) fails here, not hangs.
    @Test(.timeLimit(.minutes(1)), arguments: FuzzTargets.all.map(\.name))
    func everySeedAndReproducerHoldsTheInvariants(_ name: String) async throws {
        let target = try #require(FuzzTargets.named(name))
        let seeds = FuzzInputs.files(at: "\(Self.root)/Fuzz/Corpus/\(name)")
        #expect(seeds.count >= 4, "a seed corpus for \(name) in Fuzz/Corpus/\(name)")
        #expect(FileManager.default.fileExists(atPath: "\(Self.root)/Fuzz/Dictionaries/\(name).dict") || name == "websocket",
                "a dictionary for \(name)")
        let files = seeds + FuzzInputs.files(at: "\(Self.root)/Tests/ConvoyFuzzTests/Fuzz/\(name)")
        let results = await Self.replay(target, files)
        let broken = results.filter { !$0.value.broken.isEmpty }.mapValues(\.broken)
        #expect(broken.isEmpty, "\(broken)")
        // Each invariant had its chance: some seeds are read, some refused.
        let read = seeds.filter { results[$0]?.accepted == true }
        #expect(!read.isEmpty && read.count < seeds.count, "\(read.count) of \(seeds.count) seeds read by \(name)")
    }

    @Test func everyTargetHasADistinctName() {
        let names = FuzzTargets.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.count == 12)
    }
}
