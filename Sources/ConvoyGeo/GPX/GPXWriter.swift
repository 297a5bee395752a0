import Foundation

/// Writes GPX 1.0 or 1.1. Output is deterministic: fixed decimal places
/// (7 for coordinates ≈ 1 cm), UTC times, elements in schema order.
public enum GPXWriter {
    public static func string(_ doc: GPXDocument) -> String {
        let times = GPXTime()
        let ns = doc.version == .v1_0 ? "http://www.topografix.com/GPX/1/0" : "http://www.topografix.com/GPX/1/1"
        let xsd = doc.version == .v1_0 ? "http://www.topografix.com/GPX/1/0/gpx.xsd" : "http://www.topografix.com/GPX/1/1/gpx.xsd"
        var out = """
        <?xml version="1.0" encoding="UTF-8"?>
        <gpx version="\(doc.version.rawValue)" creator="\(escape(doc.creator))" xmlns="\(ns)" \
        xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="\(ns) \(xsd)">

        """
        for w in doc.waypoints { point("wpt", w, indent: "  ", into: &out, times: times) }
        for r in doc.routes {
            out += "  <rte>\n"
            if let name = r.name { out += "    <name>\(escape(name))</name>\n" }
            for p in r.points { point("rtept", p, indent: "    ", into: &out, times: times) }
            out += "  </rte>\n"
        }
        for t in doc.tracks {
            out += "  <trk>\n"
            if let name = t.name { out += "    <name>\(escape(name))</name>\n" }
            for s in t.segments {
                out += "    <trkseg>\n"
                for p in s { point("trkpt", p, indent: "      ", into: &out, times: times) }
                out += "    </trkseg>\n"
            }
            out += "  </trk>\n"
        }
        out += "</gpx>\n"
        return out
    }

    public static func write(_ doc: GPXDocument, to path: String) throws(GeoError) {
        do {
            try string(doc).write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw .cannotWrite("cannot write: \(error.localizedDescription)", file: path)
        }
    }

    private static func point(_ tag: String, _ p: GPXPoint, indent: String, into out: inout String, times: GPXTime) {
        out += "\(indent)<\(tag) lat=\"\(fixed(p.position.lat, 7))\" lon=\"\(fixed(p.position.lon, 7))\">"
        var children = ""
        if let e = p.elevation { children += "<ele>\(fixed(e, 1))</ele>" }
        if let t = p.time { children += "<time>\(times.format(t))</time>" }
        if let n = p.name { children += "<name>\(escape(n))</name>" }
        if let f = p.fix { children += "<fix>\(f.rawValue)</fix>" }
        if let s = p.satellites { children += "<sat>\(s)</sat>" }
        if let h = p.hdop { children += "<hdop>\(fixed(h, 1))</hdop>" }
        if let v = p.vdop { children += "<vdop>\(fixed(v, 1))</vdop>" }
        if let d = p.pdop { children += "<pdop>\(fixed(d, 1))</pdop>" }
        out += children + "</\(tag)>\n"
    }

    /// `value` with exactly `places` decimals, no locale, no "-0.0".
    static func fixed(_ value: Double, _ places: Int) -> String {
        let s = String(format: "%.\(places)f", value)
        if s.hasPrefix("-"), s.dropFirst().allSatisfy({ $0 == "0" || $0 == "." }) { return String(s.dropFirst()) }
        return s
    }

    private static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }
}
