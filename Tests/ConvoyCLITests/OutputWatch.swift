import Foundation
import Synchronization

/// A child's output read to its end on a thread of its own (never on one of the async tests' few threads, which
/// a blocking read would hold for as long as the child runs), kept whole; `line(containing:)` waits for a line.
final class OutputWatch: Sendable {
    private let text = Mutex("")
    private let ended = Mutex(false)

    init(_ pipe: Pipe) {
        Thread { [self] in
            let handle = pipe.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                text.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
            ended.withLock { $0 = true }
        }.start()
    }

    var all: String { text.withLock { $0 } }

    /// The first whole line holding `marker` (nil if the output ends first, or after `timeout` seconds).
    func line(containing marker: String, timeout: Double = 120) async -> String? {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            let lines = all.split(separator: "\n", omittingEmptySubsequences: false)
            // The last piece is whole only once a newline follows it.
            if let line = lines.dropLast().first(where: { $0.contains(marker) }) { return String(line) }
            if ended.withLock({ $0 }) { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    /// The address in the first line holding `marker` (`… at http://127.0.0.1:PORT/`).
    func address(after marker: String, timeout: Double = 120) async -> String? {
        guard let line = await line(containing: marker, timeout: timeout), let start = line.range(of: "http://") else { return nil }
        return line[start.lowerBound...].split(separator: " ").first.map(String.init)
    }
}
