import Foundation

/// Charts for report.html as inline SVG: no script, no font or file from
/// anywhere else, so the report opens the same on a laptop, in a CI
/// artifact viewer and in a mail attachment.
public enum SVGChart {
    public struct Series: Sendable {
        public var name: String
        public var color: String
        /// x, and y (nil: a gap in the line).
        public var points: [(x: Double, y: Double?)]
        public var dashed: Bool

        public init(name: String, color: String, points: [(x: Double, y: Double?)], dashed: Bool = false) {
            (self.name, self.color, self.points, self.dashed) = (name, color, points, dashed)
        }
    }

    /// A horizontal line across the plot (a limit or a target).
    public struct Reference: Sendable {
        public var label: String
        public var y: Double
        public var color: String

        public init(label: String, y: Double, color: String) { (self.label, self.y, self.color) = (label, y, color) }
    }

    public static let palette = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2", "#a16207", "#4b5563"]

    static let width = 760.0, height = 260.0
    static let left = 64.0, right = 16.0, top = 28.0, bottom = 40.0

    /// Lines over a shared x axis; `xTicks` labels x (default: plain numbers).
    public static func line(_ series: [Series], xLabel: String, yLabel: String, references: [Reference] = [],
                            xTick: (Double) -> String = { format($0) }) -> String {
        let xs = series.flatMap { $0.points.map(\.x) }
        let ys = series.flatMap { $0.points.compactMap(\.y) } + references.map(\.y)
        guard let x0 = xs.min(), let x1 = xs.max(), !ys.isEmpty else { return empty("nothing was recorded") }
        let yTicks = niceTicks(0, max(ys.max()!, 1e-9))
        let xTicks = niceTicks(x0, x1 > x0 ? x1 : x0 + 1)
        let frame = Frame(x0: xTicks.first!, x1: xTicks.last!, y0: yTicks.first!, y1: yTicks.last!)
        var svg = open() + axes(frame, xTicks: xTicks, yTicks: yTicks, xLabel: xLabel, yLabel: yLabel, xTick: xTick)
        for r in references {
            let y = frame.py(r.y)
            svg += "<line x1=\"\(f(left))\" x2=\"\(f(width - right))\" y1=\"\(f(y))\" y2=\"\(f(y))\" stroke=\"\(r.color)\" stroke-dasharray=\"6 4\"/>"
            svg += "<text x=\"\(f(width - right - 4))\" y=\"\(f(y - 4))\" text-anchor=\"end\" fill=\"\(r.color)\">\(escape(r.label))</text>"
        }
        for s in series {
            for segment in segments(s.points) {
                let d = segment.enumerated().map { i, p in "\(i == 0 ? "M" : "L")\(f(frame.px(p.x))) \(f(frame.py(p.y)))" }.joined()
                if segment.count == 1 {
                    svg += "<circle cx=\"\(f(frame.px(segment[0].x)))\" cy=\"\(f(frame.py(segment[0].y)))\" r=\"2\" fill=\"\(s.color)\"/>"
                } else {
                    svg += "<path d=\"\(d)\" fill=\"none\" stroke=\"\(s.color)\" stroke-width=\"1.6\"\(s.dashed ? " stroke-dasharray=\"4 3\"" : "")/>"
                }
            }
        }
        return svg + legend(series.map { ($0.name, $0.color) }) + "</svg>"
    }

    /// Horizontal stacked bars: one row per label, one colour per component, with each row's total at its end.
    public static func stackedBars(_ rows: [(label: String, parts: [Double])], components: [String], unit: String) -> String {
        guard !rows.isEmpty else { return empty("nothing was recorded") }
        let rowHeight = 26.0
        let h = top + Double(rows.count) * rowHeight + bottom
        let labelWidth = 150.0
        let total = rows.map { $0.parts.reduce(0, +) }.max() ?? 0
        let ticks = niceTicks(0, max(total, 1e-9))
        let x1 = ticks.last!
        let plotWidth = width - labelWidth - right - 60
        func px(_ v: Double) -> Double { labelWidth + v / x1 * plotWidth }
        var svg = open(height: h)
        for t in ticks {
            svg += "<line x1=\"\(f(px(t)))\" x2=\"\(f(px(t)))\" y1=\"\(f(top))\" y2=\"\(f(h - bottom))\" stroke=\"#e5e7eb\"/>"
            svg += "<text x=\"\(f(px(t)))\" y=\"\(f(h - bottom + 16))\" text-anchor=\"middle\">\(format(t))</text>"
        }
        svg += "<text x=\"\(f(px(x1 / 2)))\" y=\"\(f(h - 6))\" text-anchor=\"middle\" class=\"axis\">\(escape(unit))</text>"
        for (i, row) in rows.enumerated() {
            let y = top + Double(i) * rowHeight + 4
            svg += "<text x=\"\(f(labelWidth - 8))\" y=\"\(f(y + 13))\" text-anchor=\"end\">\(escape(row.label))</text>"
            var x = 0.0
            for (k, v) in row.parts.enumerated() where v > 0 {
                svg += "<rect x=\"\(f(px(x)))\" y=\"\(f(y))\" width=\"\(f(max(px(x + v) - px(x), 0.5)))\" height=\"18\" fill=\"\(palette[k % palette.count])\"><title>\(escape(components[k])): \(format(v)) \(escape(unit))</title></rect>"
                x += v
            }
            svg += "<text x=\"\(f(px(x) + 6))\" y=\"\(f(y + 13))\">\(format(x))</text>"
        }
        return svg + legend(components.enumerated().map { ($1, palette[$0 % palette.count]) }) + "</svg>"
    }

    /// A latency distribution as HdrHistogram plots it: x is the percentile on a
    /// log scale of 1/(1 − p) (50, 90, 99, 99.9, …), y the latency.
    public static func percentiles(_ series: [(name: String, color: String, points: [(percentile: Double, value: Double)])], unit: String) -> String {
        let mapped = series.map { s in
            Series(name: s.name, color: s.color, points: s.points.filter { $0.percentile < 100 }.map { (log10(100 / (100 - $0.percentile)), $0.value) })
        }
        return line(mapped, xLabel: "percentile", yLabel: unit, xTick: { x in
            let p = 100 - 100 / pow(10, x)
            return p >= 99.99 ? "99.99+" : format(p)
        })
    }

    // MARK: Drawing

    struct Frame {
        var x0, x1, y0, y1: Double
        func px(_ x: Double) -> Double { left + (x - x0) / (x1 - x0) * (width - left - right) }
        func py(_ y: Double) -> Double { height - bottom - (y - y0) / (y1 - y0) * (height - top - bottom) }
    }

    static func open(height h: Double = height) -> String {
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(f(width)) \(f(h))\" width=\"\(f(width))\" height=\"\(f(h))\" class=\"chart\" font-family=\"system-ui, sans-serif\" font-size=\"11\" fill=\"#374151\">"
    }

    static func axes(_ frame: Frame, xTicks: [Double], yTicks: [Double], xLabel: String, yLabel: String, xTick: (Double) -> String) -> String {
        var svg = ""
        for t in yTicks {
            let y = frame.py(t)
            svg += "<line x1=\"\(f(left))\" x2=\"\(f(width - right))\" y1=\"\(f(y))\" y2=\"\(f(y))\" stroke=\"#e5e7eb\"/>"
            svg += "<text x=\"\(f(left - 6))\" y=\"\(f(y + 4))\" text-anchor=\"end\">\(format(t))</text>"
        }
        // At most about ten x labels.
        let stride = max(1, Int((Double(xTicks.count) / 10).rounded(.up)))
        for (i, t) in xTicks.enumerated() where i % stride == 0 {
            let x = frame.px(t)
            svg += "<line x1=\"\(f(x))\" x2=\"\(f(x))\" y1=\"\(f(height - bottom))\" y2=\"\(f(height - bottom + 4))\" stroke=\"#9ca3af\"/>"
            svg += "<text x=\"\(f(x))\" y=\"\(f(height - bottom + 16))\" text-anchor=\"middle\">\(escape(xTick(t)))</text>"
        }
        svg += "<line x1=\"\(f(left))\" x2=\"\(f(width - right))\" y1=\"\(f(height - bottom))\" y2=\"\(f(height - bottom))\" stroke=\"#9ca3af\"/>"
        svg += "<text x=\"\(f((left + width - right) / 2))\" y=\"\(f(height - 6))\" text-anchor=\"middle\" class=\"axis\">\(escape(xLabel))</text>"
        svg += "<text x=\"14\" y=\"\(f((top + height - bottom) / 2))\" text-anchor=\"middle\" class=\"axis\" transform=\"rotate(-90 14 \(f((top + height - bottom) / 2)))\">\(escape(yLabel))</text>"
        return svg
    }

    static func legend(_ items: [(String, String)]) -> String {
        var x = left, svg = ""
        for (name, color) in items {
            svg += "<rect x=\"\(f(x))\" y=\"8\" width=\"12\" height=\"10\" fill=\"\(color)\"/><text x=\"\(f(x + 16))\" y=\"17\">\(escape(name))</text>"
            x += 28 + Double(name.count) * 6.2
        }
        return svg
    }

    static func empty(_ message: String) -> String {
        open(height: 60) + "<text x=\"\(f(width / 2))\" y=\"34\" text-anchor=\"middle\" fill=\"#6b7280\">\(escape(message))</text></svg>"
    }

    /// Runs of consecutive points with a value.
    static func segments(_ points: [(x: Double, y: Double?)]) -> [[(x: Double, y: Double)]] {
        var out: [[(x: Double, y: Double)]] = [], current: [(x: Double, y: Double)] = []
        for p in points {
            if let y = p.y { current.append((p.x, y)) } else if !current.isEmpty { out.append(current); current = [] }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// Round ticks (1, 2, 2.5, 5 × 10ⁿ) from at or below `low` to at or above `high`, about five of them.
    static func niceTicks(_ low: Double, _ high: Double) -> [Double] {
        let span = max(high - low, 1e-9)
        let raw = span / 5
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1, 2, 2.5, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? 10 * magnitude
        let start = floor(low / step) * step
        var ticks: [Double] = []
        var t = start
        while t < high + step * 0.999, ticks.count < 60 {
            ticks.append(t)
            t = start + Double(ticks.count) * step
        }
        return ticks.count >= 2 ? ticks : [start, start + step]
    }

    static func f(_ v: Double) -> String { String(format: "%.1f", v) }

    public static func format(_ v: Double) -> String {
        if v == 0 { return "0" }
        let a = abs(v)
        if a >= 10_000 { return String(format: "%.0fk", v / 1000) }
        if a >= 100 || v == v.rounded() { return String(format: "%.0f", v) }
        if a >= 10 { return String(format: "%.1f", v) }
        if a >= 1 { return String(format: "%.2f", v) }
        return String(format: "%.3g", v)
    }

    /// Text for HTML, SVG or XML (one escaping for all three: `Markup.escape`).
    public static func escape(_ s: String) -> String { Markup.escape(s) }
}
