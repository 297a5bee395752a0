import Foundation

/// The live dashboard's page: one self-contained HTML file (its style and script inline, charts drawn as SVG by the
/// script, nothing fetched from anywhere but the run itself). It reads `/api/state` once, then listens to
/// `/api/events`; when the run ends it keeps the last state and links to report.html. Elements a test or a person may
/// look for carry ids (`#online`, `#sent`, `#end-delivered`…) and the thresholds' rows `data-threshold` and `data-state`.
///
/// Its parts are files of their own beside this one (`Page/`: dashboard.html, dashboard.css, dashboard.js, map.js),
/// SwiftPM resources of this module, put together once: the HTML's `/* dashboard.css */`, `/* dashboard.js */` and
/// `/* map.js */` lines stand for those files.
public enum DashboardPage {
    public static let html: String = assemble()

    /// The page's files, by name; nil for one that is missing (a binary copied without its resources folder).
    static func file(_ name: String) -> String? {
        let dot = name.lastIndex(of: ".")!
        guard let url = Bundle.module.url(forResource: String(name[..<dot]), withExtension: String(name[name.index(after: dot)...]),
                                          subdirectory: "Page") else { return nil }
        return try? String(contentsOf: url, encoding: .utf8)
    }

    static let parts = ["dashboard.css", "dashboard.js", "map.js"]

    static func assemble() -> String {
        guard var page = file("dashboard.html") else { return missing("dashboard.html") }
        for name in parts {
            guard let text = file(name) else { return missing(name) }
            page = page.replacingOccurrences(of: "/* \(name) */", with: text)
        }
        return page
    }

    /// What a page says when its files are not where the binary expects them.
    static func missing(_ name: String) -> String {
        """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Convoy</title></head><body>
        <p>The dashboard's page is missing a file (\(name)): it is in Convoy_ConvoyMetrics.resources beside the convoy binary, \
        which must be copied with it (\(Bundle.module.bundleURL.path)).</p>
        <p>The run's figures are served as JSON: <a href="api/state">api/state</a>.</p></body></html>
        """
    }
}
