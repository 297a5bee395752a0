import Foundation

/// Numbers as the CLI shows them to people.
enum Format {
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e12 else { return String(format: "%.3g s", seconds) }
        if seconds < 0 { return "-" + duration(-seconds) }
        let s = Int(seconds.rounded())
        if s < 60 { return "\(s)s" }
        if s < 3600 { return String(format: "%dm%02ds", s / 60, s % 60) }
        return String(format: "%dh%02dm%02ds", s / 3600, (s % 3600) / 60, s % 60)
    }

    static func distance(_ metres: Double) -> String {
        metres < 1000 ? String(format: "%.0f m", metres) : String(format: "%.2f km", metres / 1000)
    }

    static func speed(_ mps: Double) -> String {
        String(format: "%.1f m/s (%.1f km/h)", mps, mps * 3.6)
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? String(format: "%.0f s", s) : String(format: "%.1f s", s)
    }
}
