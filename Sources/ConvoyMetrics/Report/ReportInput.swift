import Foundation

/// What the report is drawn from: a results folder's `summary.json`,
/// `metrics.csv` (one row a second), `histograms.json` and `map.json`. `convoy report DIR`
/// reads them back, so a report can be drawn again from any folder.
public struct ReportInput: Sendable {
    public var summary: RunSummary
    /// metrics.csv's rows by column name (empty when the file is missing).
    public var series: [[String: String]]
    /// The histograms, losslessly (nil when histograms.json is missing).
    public var histograms: MetricsSnapshot?
    /// Where the phones were and what their friends saw (nil when map.json is missing: an app without locations).
    public var map: FleetMapData?

    public init(summary: RunSummary, series: [[String: String]], histograms: MetricsSnapshot?, map: FleetMapData? = nil) {
        (self.summary, self.series, self.histograms, self.map) = (summary, series, histograms, map)
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads a results folder; summary.json must be there and readable.
    public static func load(folder: String) throws(Failure) -> ReportInput {
        func file(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }
        guard let data = FileManager.default.contents(atPath: file("summary.json")) else {
            throw Failure(description: "\(file("summary.json")): not found (is \(folder) a convoy results folder?)")
        }
        let summary: RunSummary
        do {
            summary = try RunSummary.decode(data)
        } catch {
            throw Failure(description: "\(file("summary.json")): not a convoy.run.summary v\(RunSummary.currentVersion): \(Self.describe(error))")
        }
        let series = (try? String(contentsOfFile: file("metrics.csv"), encoding: .utf8)).map(parseCSV) ?? []
        var histograms: MetricsSnapshot?
        if let h = FileManager.default.contents(atPath: file("histograms.json")) {
            do {
                histograms = try JSONDecoder().decode(MetricsSnapshot.self, from: h)
            } catch {
                throw Failure(description: "\(file("histograms.json")): unreadable: \(Self.describe(error))")
            }
        }
        var map: FleetMapData?
        if let m = FileManager.default.contents(atPath: file("map.json")) {
            do {
                map = try JSONDecoder().decode(FleetMapData.self, from: m)
            } catch {
                throw Failure(description: "\(file("map.json")): unreadable: \(Self.describe(error))")
            }
        }
        return ReportInput(summary: summary, series: series, histograms: histograms, map: map)
    }

    /// metrics.csv: a header line, then values without quoting (Convoy writes no commas inside values).
    static func parseCSV(_ text: String) -> [[String: String]] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        guard !lines.isEmpty else { return [] }
        let header = lines.removeFirst()
        return lines.map { Dictionary(zip(header, $0), uniquingKeysWith: { a, _ in a }) }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let c): "missing \(path(c.codingPath + [key]))"
        case DecodingError.typeMismatch(_, let c), DecodingError.valueNotFound(_, let c), DecodingError.dataCorrupted(let c):
            "\(path(c.codingPath)): \(c.debugDescription)"
        default: "\(error)"
        }
    }

    static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingCharacters(in: CharacterSet(charactersIn: "."))
    }
}
