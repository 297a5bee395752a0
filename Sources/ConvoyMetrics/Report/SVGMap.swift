import Foundation

/// report.html's fleet map, as inline SVG (no script, no tile): the positions in Web Mercator with a graticule
/// and a scale bar; the tracked phones' true tracks with their stretches without a fix, in a GPS-denied zone or
/// without network marked; what their friends received (accuracy circles, general-location cells); and one
/// marker per phone where it last was, or past `clusterAbove` phones one circle per 16-pixel cell with its count.
/// A marker's tooltip names the phone, and for a tracked one what its friends last received.
public enum SVGMap {
    static let width = 960.0, height = 560.0
    static let clusterAbove = 1500

    struct View {
        let x0: Double, y0: Double, scale: Double

        func point(_ lat: Double, _ lon: Double) -> (x: Double, y: Double) {
            let (x, y) = SVGMap.mercator(lat, lon)
            return ((x - x0) * scale, (y - y0) * scale)
        }

        /// Metres to pixels at a latitude.
        func pixels(_ metres: Double, at lat: Double) -> Double { metres / (40_075_016.686 * cos(lat * .pi / 180)) * scale }
    }

    static func mercator(_ lat: Double, _ lon: Double) -> (Double, Double) {
        let s = sin(min(max(lat, -85), 85) * .pi / 180)
        return ((lon + 180) / 360, 0.5 - log((1 + s) / (1 - s)) / (4 * .pi))
    }

    static func unmercator(_ x: Double, _ y: Double) -> (lat: Double, lon: Double) {
        (atan(sinh(.pi * (1 - 2 * y))) * 180 / .pi, x * 360 - 180)
    }

    public static func render(_ map: FleetMapData) -> String {
        var points = map.phones.compactMap { p in p.lat.flatMap { lat in p.lon.map { (lat, $0) } } }
        for t in map.tracked { points += t.track.map { ($0.lat, $0.lon) } }
        guard !points.isEmpty else { return "<p class=\"note\">No phone had a position.</p>" }
        let xy = points.map { mercator($0.0, $0.1) }
        var (x0, x1) = (xy.map(\.0).min()!, xy.map(\.0).max()!)
        var (y0, y1) = (xy.map(\.1).min()!, xy.map(\.1).max()!)
        let pad = max(x1 - x0, y1 - y0, 2e-6) * 0.15
        (x0, x1, y0, y1) = (x0 - pad, x1 + pad, y0 - pad, y1 + pad)
        let scale = min(width / (x1 - x0), height / (y1 - y0))
        let (cx, cy) = ((x0 + x1) / 2, (y0 + y1) / 2)
        let view = View(x0: cx - width / scale / 2, y0: cy - height / scale / 2, scale: scale)
        var svg = "<svg class=\"fleet-map\" viewBox=\"0 0 \(f(width)) \(f(height))\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">"
        svg += "<rect width=\"\(f(width))\" height=\"\(f(height))\" fill=\"#f8fafc\"/>" + graticule(view) + tracks(map, view)
        svg += markers(map, view) + scaleBar(view) + "</svg>"
        return svg + legend(map)
    }

    static func graticule(_ v: View) -> String {
        let top = unmercator(v.x0, v.y0), bottom = unmercator(v.x0 + width / v.scale, v.y0 + height / v.scale)
        let step = niceStep((bottom.lon - top.lon) / 6)
        let decimals = max(0, -Int(floor(log10(step))))
        var out = ""
        var lon = (top.lon / step).rounded(.up) * step
        while lon <= bottom.lon {
            let x = v.point(top.lat, lon).x
            out += "<line x1=\"\(f(x))\" x2=\"\(f(x))\" y1=\"0\" y2=\"\(f(height))\" stroke=\"#cbd5e1\" stroke-width=\"0.6\"/>"
            out += "<text x=\"\(f(x + 2))\" y=\"12\" class=\"axis\">\(String(format: "%.\(decimals)f", lon))°</text>"
            lon += step
        }
        var lat = (bottom.lat / step).rounded(.up) * step
        while lat <= top.lat {
            let y = v.point(lat, top.lon).y
            out += "<line x1=\"0\" x2=\"\(f(width))\" y1=\"\(f(y))\" y2=\"\(f(y))\" stroke=\"#cbd5e1\" stroke-width=\"0.6\"/>"
            out += "<text x=\"4\" y=\"\(f(y - 2))\" class=\"axis\">\(String(format: "%.\(decimals)f", lat))°</text>"
            lat += step
        }
        return out
    }

    static func scaleBar(_ v: View) -> String {
        let mid = unmercator(v.x0 + width / v.scale / 2, v.y0 + height / v.scale / 2)
        let perPixel = 1 / v.pixels(1, at: mid.lat)
        let metres = niceMetres(perPixel * width / 5), w = metres / perPixel
        let label = metres >= 1000 ? "\(format(metres / 1000)) km" : "\(format(metres)) m"
        return "<g class=\"scale-bar\"><rect x=\"\(f(width - w - 24))\" y=\"\(f(height - 30))\" width=\"\(f(w + 16))\" height=\"22\" fill=\"#fff\" opacity=\"0.8\"/>"
            + "<line x1=\"\(f(width - w - 16))\" x2=\"\(f(width - 16))\" y1=\"\(f(height - 14))\" y2=\"\(f(height - 14))\" stroke=\"#111827\" stroke-width=\"2\"/>"
            + "<text x=\"\(f(width - 16 - w / 2))\" y=\"\(f(height - 18))\" text-anchor=\"middle\">\(label)</text></g>"
    }

    static func tracks(_ map: FleetMapData, _ v: View) -> String {
        var out = ""
        for t in map.tracked where t.track.count >= 2 {
            let color = SVGChart.palette[t.g % SVGChart.palette.count]
            let line = t.track.map { let p = v.point($0.lat, $0.lon); return "\(f(p.x)),\(f(p.y))" }.joined(separator: " ")
            out += "<polyline class=\"track\" points=\"\(line)\" fill=\"none\" stroke=\"\(color)\" stroke-opacity=\"0.45\" stroke-width=\"1.2\"/>"
            for fix in t.track where fix.state != .gps {
                let p = v.point(fix.lat, fix.lon)
                let fill = fix.state == .offline ? "#6b7280" : fix.state == .noFix ? "#dc2626" : "#a16207"
                out += "<circle class=\"fix-\(fix.state.rawValue)\" cx=\"\(f(p.x))\" cy=\"\(f(p.y))\" r=\"2\" fill=\"\(fill)\"/>"
            }
            // What the friends received: the newest few per friend, with their accuracy and, for general location, the cell.
            var perFriend: [Int: Int] = [:]
            for r in t.received.reversed() {
                perFriend[r.by, default: 0] += 1
                guard perFriend[r.by]! <= 3 else { continue }
                let p = v.point(r.lat, r.lon)
                out += "<circle class=\"received\" cx=\"\(f(p.x))\" cy=\"\(f(p.y))\" r=\"\(f(max(2, v.pixels(r.acc, at: r.lat))))\" fill=\"#f59e0b\" fill-opacity=\"0.08\" stroke=\"#b45309\" stroke-opacity=\"0.5\"/>"
                if r.mode.hasPrefix("general:"), let d = Double(r.mode.dropFirst(8)) {
                    let cell = pow(10, -d), a = v.point(r.lat + cell / 2, r.lon - cell / 2), b = v.point(r.lat - cell / 2, r.lon + cell / 2)
                    out += "<rect class=\"general-cell\" x=\"\(f(a.x))\" y=\"\(f(a.y))\" width=\"\(f(b.x - a.x))\" height=\"\(f(b.y - a.y))\" fill=\"none\" stroke=\"#b45309\" stroke-dasharray=\"5 3\"/>"
                }
            }
        }
        return out
    }

    static func markers(_ map: FleetMapData, _ v: View) -> String {
        let placed = map.phones.filter { $0.lat != nil && $0.lon != nil }
        var out = ""
        if placed.count > clusterAbove {
            var cells: [String: (x: Double, y: Double, n: Int, g: Int)] = [:]
            for p in placed {
                let q = v.point(p.lat!, p.lon!), key = "\(Int(q.x / 16)),\(Int(q.y / 16))"
                var c = cells[key] ?? (0, 0, 0, p.g)
                (c.x, c.y, c.n) = (c.x + q.x, c.y + q.y, c.n + 1)
                cells[key] = c
            }
            for c in cells.values.sorted(by: { ($0.x, $0.y) < ($1.x, $1.y) }) {
                let (x, y) = (c.x / Double(c.n), c.y / Double(c.n))
                out += "<g class=\"cluster\" data-count=\"\(c.n)\"><circle cx=\"\(f(x))\" cy=\"\(f(y))\" r=\"\(f(min(14, 3 + 2 * log2(Double(c.n)))))\" fill=\"\(SVGChart.palette[c.g % SVGChart.palette.count])\" fill-opacity=\"0.6\"/>"
                    + (c.n > 1 ? "<text x=\"\(f(x))\" y=\"\(f(y + 3))\" text-anchor=\"middle\" class=\"count\">\(c.n)</text>" : "") + "</g>"
            }
            return out
        }
        let tracked = Dictionary(map.tracked.map { ($0.i, $0) }, uniquingKeysWith: { a, _ in a })
        for p in placed {
            let q = v.point(p.lat!, p.lon!)
            let group = p.g < map.groups.count ? map.groups[p.g] : ""
            var title = "phone \(p.i) (\(group)), last fix: \(p.state.rawValue)"
            if let t = tracked[p.i] {
                var last: [Int: FleetMapData.Receipt] = [:]
                for r in t.received { last[r.by] = r }
                for (friend, r) in last.sorted(by: { $0.key < $1.key }) {
                    title += "\nfriend \(friend) (\(r.mode)): last update ±\(Int(r.acc.rounded())) m, " + (r.latencyMs.map { "\(format($0)) ms" } ?? "latency unknown")
                }
            }
            out += "<circle class=\"phone\" data-i=\"\(p.i)\" cx=\"\(f(q.x))\" cy=\"\(f(q.y))\" r=\"4.5\" fill=\"\(SVGChart.palette[p.g % SVGChart.palette.count])\" stroke=\"#fff\"><title>\(SVGChart.escape(title))</title></circle>"
        }
        return out
    }

    static func legend(_ map: FleetMapData) -> String {
        let groups = map.groups.enumerated().map { k, g in
            "<span><i style=\"background:\(SVGChart.palette[k % SVGChart.palette.count])\"></i>\(SVGChart.escape(g))</span>"
        }.joined()
        return "<p class=\"legend\">\(groups)</p><p class=\"note\">Each phone where it last was (\(map.phones.count) phones; "
            + (map.phones.count > clusterAbove ? "clustered in 16-pixel cells, with their counts" : "one marker each, its tooltip names it")
            + "); \(SVGChart.escape(map.sampling)). Lines: true tracks; on them, red: no fix, amber: Wi-Fi or cell in a GPS-denied zone, grey: no network. "
            + "Amber circles: what friends received, with the accuracy it carried; dashed squares: the cell a general location was rounded to. "
            + "Drawn offline: a graticule and a scale bar, no tiles.</p>"
    }

    static func niceStep(_ v: Double) -> Double {
        let e = pow(10, floor(log10(max(v, 1e-12))))
        return [1, 2, 2.5, 5, 10].map { $0 * e }.first { $0 >= v } ?? 10 * e
    }

    static func niceMetres(_ m: Double) -> Double {
        let e = pow(10, floor(log10(max(m, 1e-9))))
        return [5, 2, 1].map { $0 * e }.first { $0 <= m } ?? e
    }

    static func f(_ v: Double) -> String { String(format: "%.1f", v) }
    static func format(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(format: "%.1f", v) }
}
