@testable import ConvoyFleet
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Closer's Argon2id runs on `LowPriorityWork`'s threads: every job runs once, on a thread at nice 10, and its
/// result (or typed error) comes back to the task that asked. `make test-tsan` runs this under ThreadSanitizer:
/// the queue is shared by the asking tasks and the threads.
@Suite struct LowPriorityWorkTests {
    struct Refused: Error, Equatable { let n: Int }

    @Test func everyJobRunsOnceAtLowPriorityAndAnswersItsOwnCaller() async throws {
        let work = LowPriorityWork(threads: 3)
        let callersNice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let answers = await withTaskGroup(of: (Int, Int, Int32).self) { group in
            for n in 0..<300 {
                group.addTask {
                    let (square, nice) = try! await work.run { () throws(Refused) in
                        (n * n, getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
                    }
                    return (n, square, nice)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 300 && Set(answers.map(\.0)) == Set(0..<300))
        #expect(answers.allSatisfy { $0.1 == $0.0 * $0.0 && $0.2 == LowPriorityWork.nice })
        // The asking thread's own priority is untouched: the jobs' threads set theirs alone.
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == callersNice)
        await #expect(throws: Refused(n: 7)) { try await work.run { () throws(Refused) -> Int in throw Refused(n: 7) } }
    }
}
