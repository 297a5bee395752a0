import Foundation
import Synchronization

/// A run's results folder, `results/<UTC timestamp>-<scenario>/`:
/// `metrics.csv` grows a row a second as the run goes (so a crash keeps it);
/// at the end `summary.json`, `summary.md`, `latency-<name>.hgrm`,
/// `histograms.json` (every histogram, losslessly, for `convoy merge`); then
/// `writeReports()` draws `report.html` and `junit.xml` from those.
public final class ResultsFolder: Sendable {
    public let path: String
    private let series: Mutex<FileHandle?>

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Makes the folder (and its parents) and starts `metrics.csv` with `columns`.
    public init(path: String, columns: [String]) throws(Failure) {
        self.path = path
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw Failure(description: "\(path) exists and is not a folder")
        }
        do {
            try fm.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "cannot make the results folder \(path): \(error.localizedDescription)")
        }
        let csv = (path as NSString).appendingPathComponent("metrics.csv")
        guard fm.createFile(atPath: csv, contents: Data((columns.joined(separator: ",") + "\n").utf8)),
              let handle = FileHandle(forWritingAtPath: csv)
        else { throw Failure(description: "cannot write \(csv)") }
        handle.seekToEndOfFile()
        series = Mutex(handle)
    }

    /// The default folder name: `<UTC yyyyMMdd-HHmmss>-<scenario>`.
    public static func defaultName(scenario: String, at date: Date = Date()) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd-HHmmss"
        let safe = String(scenario.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
        return "\(f.string(from: date))-\(safe)"
    }

    /// Appends one row to `metrics.csv`, written through at once.
    public func append(row: [String]) {
        series.withLock { h in
            h?.write(Data((row.joined(separator: ",") + "\n").utf8))
        }
    }

    /// Writes the end-of-run files.
    public func finish(summary: RunSummary, metrics: MetricsSnapshot) throws(Failure) {
        series.withLock { h in
            try? h?.close()
            h = nil
        }
        do {
            try write("summary.json", try summary.json())
            try write("summary.md", Data(summary.markdown().utf8))
            for name in metrics.histograms.keys.sorted() {
                if let text = metrics.hgrm(name) { try write("latency-\(name).hgrm", Data(text.utf8)) }
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try write("histograms.json", try encoder.encode(metrics))
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "cannot write the results in \(path): \(error)")
        }
    }

    /// Draws `report.html` and `junit.xml` from what the folder holds (what `convoy report DIR` does).
    public func writeReports() throws(Failure) {
        let input: ReportInput
        do {
            input = try ReportInput.load(folder: path)
        } catch {
            throw Failure(description: error.description)
        }
        try Self.writeReports(input, in: path)
    }

    /// Writes `report.html` and `junit.xml` for `input` into `folder`.
    public static func writeReports(_ input: ReportInput, in folder: String) throws(Failure) {
        for (name, text) in [("report.html", HTMLReport.render(input)), ("junit.xml", JUnitReport.render(input.summary))] {
            let file = (folder as NSString).appendingPathComponent(name)
            do {
                try Data(text.utf8).write(to: URL(fileURLWithPath: file))
            } catch {
                throw Failure(description: "cannot write \(file): \(error.localizedDescription)")
            }
        }
    }

    /// Writes `name` readable by its owner only (0600) from the first byte: for secrets such as the roster.
    public func writePrivate(_ name: String, _ data: Data) throws(Failure) {
        let file = (path as NSString).appendingPathComponent(name)
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "cannot write \(file): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        fchmod(fd, 0o600)
        let ok = data.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        guard ok else { throw Failure(description: "cannot write \(file): \(String(cString: strerror(errno)))") }
    }

    /// Writes `name` in the folder (e.g. a shard's `ledger.json`).
    public func write(_ name: String, _ data: Data) throws(Failure) {
        let file = (path as NSString).appendingPathComponent(name)
        do {
            try data.write(to: URL(fileURLWithPath: file))
        } catch {
            throw Failure(description: "cannot write \(file): \(error.localizedDescription)")
        }
    }
}
