import Foundation
import Logging
import Synchronization

/// swift-log to a file (`run.log`): one line per message with its UTC time,
/// level and label. Convoy's own messages (label `convoy.run`) at `echoLevel`
/// or above also go to standard error; the embedded server's stay in the file.
struct FileLogHandler: LogHandler {
    private final class Sink: Sendable {
        let handle: Mutex<FileHandle?>
        init(_ handle: FileHandle?) { self.handle = Mutex(handle) }
        func write(_ text: String) { handle.withLock { $0?.write(Data(text.utf8)) } }
    }

    private let sink: Sink
    private let label: String
    private let echoLevel: Logger.Level
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Creates (or truncates) `path`.
    static func factory(path: String, level: Logger.Level, echoLevel: Logger.Level = .warning) -> @Sendable (String) -> any LogHandler {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let sink = Sink(FileHandle(forWritingAtPath: path))
        return { label in FileLogHandler(sink: sink, label: label, echoLevel: echoLevel, logLevel: level) }
    }

    private init(sink: Sink, label: String, echoLevel: Logger.Level, logLevel: Logger.Level) {
        (self.sink, self.label, self.echoLevel, self.logLevel) = (sink, label, echoLevel, logLevel)
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let extra = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let time = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        sink.write("\(time) \(event.level) \(label): \(event.message)\(extra)\n")
        if event.level >= echoLevel, label == "convoy.run" {
            FileHandle.standardError.write(Data("convoy: \(event.level): \(event.message)\n".utf8))
        }
    }
}
