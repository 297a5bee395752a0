import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads GPX 1.0 and 1.1 (tracks, segments, routes, waypoints) with Foundation's
/// XMLParser (libxml2), fed from a stream in chunks: a file of any size is
/// read without holding its text (only its points), and libxml2's 10 MB limit
/// on one chunk of input does not apply. Unknown elements and `<extensions>`
/// are skipped; a value that cannot be read is an error naming
/// file:line:column and the element. The bytes are checked to be UTF-8 on
/// their way in (`UTF8CheckedStream`: XMLParser traps on a name that is not).
public enum GPXReader {
    public static func read(contentsOf path: String) throws(GeoError) -> GPXDocument {
        guard FileManager.default.isReadableFile(atPath: path), let stream = InputStream(fileAtPath: path) else {
            throw .unreadable("cannot read the file (missing or not readable)", file: path)
        }
        return try read(UTF8CheckedStream(stream), file: path)
    }

    public static func read(data: Data, file: String = "<memory>") throws(GeoError) -> GPXDocument {
        try read(UTF8CheckedStream(InputStream(data: data)), file: file)
    }

    private static func read(_ stream: UTF8CheckedStream, file: String) throws(GeoError) -> GPXDocument {
        let parser = XMLParser(stream: stream)
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        let delegate = GPXParserDelegate(file: file, parser: parser)
        parser.delegate = delegate
        let ok = parser.parse()
        if let bad = stream.failure {
            throw .malformedXML("byte 0x\(String(bad.byte, radix: 16, uppercase: true)) is not UTF-8, and the file names no other encoding "
                                + "(save it as UTF-8, or name its encoding in <?xml … encoding=\"…\"?>)", file: file, line: bad.line, column: bad.column)
        }
        if let error = delegate.failure { throw error }
        guard ok else {
            throw .malformedXML("not well-formed XML: \(Self.describe(parser.parserError))", file: file,
                                line: parser.lineNumber, column: parser.columnNumber)
        }
        guard delegate.sawRoot else {
            throw .malformedXML("no <gpx> root element", file: file, line: parser.lineNumber, column: parser.columnNumber)
        }
        return delegate.document
    }

    /// An XMLParser error in words, never "NSXMLParserErrorDomain error N".
    /// Its codes are libxml2's `xmlParserErrors` (NSXMLParser's list is the same).
    static func describe(_ error: (any Error)?) -> String {
        guard let error else { return "the parser stopped" }
        let code = (error as NSError).code
        switch code {
        case 3, 4: return "the file is empty or does not start with XML"
        case 5, 77: return "the file ends in the middle of the document (truncated?)"
        case 6...9: return "a character that XML does not allow"
        case 10...30: return "an & that does not start a known entity (a literal & is written &amp;)"
        case 31, 32, 79, 81: return "an encoding this parser does not read (use UTF-8)"
        case 38: return "a < inside an attribute value (write &lt;)"
        case 39...44, 65, 75: return "a malformed attribute (name=\"value\", each name once)"
        case 56, 57, 64: return "a malformed <?xml …?> declaration"
        case 68: return "a name is missing after < or & (a literal & is written &amp;)"
        case 72, 73: return "a tag is not closed with >"
        case 74, 76: return "an element is not closed, or closed by the wrong end tag"
        case 85: return "elements are not properly nested"
        case 86: return "content after the end of the root element"
        default: return "libxml2 error \(code)"
        }
    }
}

/// The SAX state for one parse. Not shared across threads.
private final class GPXParserDelegate: NSObject, XMLParserDelegate {
    let file: String
    unowned let parser: XMLParser
    var document = GPXDocument(version: .v1_1, creator: "")
    var failure: GeoError?
    var sawRoot = false

    private let times = GPXTime()
    private var text = ""
    private var extensionDepth = 0
    private var point: GPXPoint?
    private var pointKind = ""
    private var segment: [GPXPoint]?
    private var track: GPXTrack?
    private var route: GPXRoute?
    private var assumedUTCCount = 0

    init(file: String, parser: XMLParser) {
        self.file = file
        self.parser = parser
    }

    private func fail(_ error: GeoError) {
        guard failure == nil else { return }
        failure = error
        parser.abortParsing()
    }

    private func badValue(_ key: String, _ message: String) -> GeoError {
        .badValue(message, file: file, line: parser.lineNumber, column: parser.columnNumber, key: key)
    }

    /// GPX's own namespaces, plus whatever the root `<gpx>` declares (some
    /// writers get it wrong); elements of any other namespace are skipped whole,
    /// as GPX 1.0 allows them anywhere.
    private var gpxNamespaces: Set<String> = ["", "http://www.topografix.com/GPX/1/0", "http://www.topografix.com/GPX/1/1"]

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        text = ""
        if name == "gpx", !sawRoot, extensionDepth == 0 { gpxNamespaces.insert(namespaceURI ?? "") }
        if extensionDepth > 0 || name == "extensions" || !gpxNamespaces.contains(namespaceURI ?? "") {
            extensionDepth += 1
            return
        }
        switch name {
        case "gpx":
            sawRoot = true
            document.version = attributes["version"] == "1.0" ? .v1_0 : .v1_1
            document.creator = attributes["creator"] ?? ""
        case "trk": track = GPXTrack(segments: [])
        case "trkseg": segment = []
        case "rte": route = GPXRoute(points: [])
        case "trkpt", "rtept", "wpt":
            pointKind = name
            point = readPosition(name, attributes)
        default: break
        }
    }

    private func readPosition(_ element: String, _ attributes: [String: String]) -> GPXPoint? {
        func coordinate(_ key: String, limit: Double) -> Double? {
            guard let raw = attributes[key] else {
                fail(.missingValue("<\(element)> has no \(key) attribute", file: file, line: parser.lineNumber,
                                   column: parser.columnNumber, key: "\(element)@\(key)"))
                return nil
            }
            guard let value = Double(raw.trimmedASCII), value.isFinite, abs(value) <= limit else {
                fail(badValue("\(element)@\(key)", "<\(element)> \(key)=\"\(raw)\" is not a number in ±\(Int(limit))"))
                return nil
            }
            return value
        }
        guard let lat = coordinate("lat", limit: 90), let lon = coordinate("lon", limit: 180) else { return nil }
        return GPXPoint(position: GeoPoint(lat: lat, lon: lon), line: parser.lineNumber)
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if extensionDepth == 0 { text += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if extensionDepth > 0 {
            extensionDepth -= 1
            return
        }
        let value = String(text.trimmedASCII)
        text = ""
        if point != nil, let field = readPointField(name, value) {
            field(&point!)
            return
        }
        switch name {
        case "trkpt": if let p = point { segment?.append(p) }; point = nil
        case "rtept": if let p = point { route?.points.append(p) }; point = nil
        case "wpt": if let p = point { document.waypoints.append(p) }; point = nil
        case "trkseg": if let s = segment { track?.segments.append(s) }; segment = nil
        case "trk": if let t = track { document.tracks.append(t) }; track = nil
        case "rte": if let r = route { document.routes.append(r) }; route = nil
        case "name" where point == nil:
            if track != nil, segment == nil { track?.name = value }
            if route != nil { route?.name = value }
        case "gpx":
            if assumedUTCCount > 0 {
                document.warnings.append("\(assumedUTCCount) time value(s) had no time zone and were read as UTC")
            }
        default: break
        }
    }

    /// Deepest trench to the edge of the stratosphere, metres.
    static let elevations: ClosedRange<Double> = -12_000...100_000
    /// Dilution of precision: receivers write up to 99.9 (no fix).
    static let dops: ClosedRange<Double> = 0...999

    /// How a child element of a point sets its field; nil if not a point field.
    private func readPointField(_ name: String, _ value: String) -> ((inout GPXPoint) -> Void)? {
        func number(_ key: String, in range: ClosedRange<Double>) -> Double? {
            guard let d = Double(value), range.contains(d) else {
                fail(badValue("\(pointKind)/\(key)", "<\(key)>\(value)</\(key)> is not a number in \(range.lowerBound)…\(range.upperBound)"))
                return nil
            }
            return d
        }
        switch name {
        case "ele": guard let d = number(name, in: Self.elevations) else { return { _ in } }; return { $0.elevation = d }
        case "hdop": guard let d = number(name, in: Self.dops) else { return { _ in } }; return { $0.hdop = d }
        case "vdop": guard let d = number(name, in: Self.dops) else { return { _ in } }; return { $0.vdop = d }
        case "pdop": guard let d = number(name, in: Self.dops) else { return { _ in } }; return { $0.pdop = d }
        case "sat":
            guard let n = Int(value), (0...999).contains(n) else {
                fail(badValue("\(pointKind)/sat", "<sat>\(value)</sat> is not a whole number in 0…999"))
                return { _ in }
            }
            return { $0.satellites = n }
        case "fix":
            guard let fix = FixType(rawValue: value) else {
                document.warnings.append("line \(parser.lineNumber): unknown <fix>\(value)</fix> ignored")
                return { _ in }
            }
            return { $0.fix = fix }
        case "time":
            guard let (date, assumed) = times.parse(value) else {
                fail(badValue("\(pointKind)/time", "<time>\(value)</time> is not an ISO 8601 time"))
                return { _ in }
            }
            if assumed { assumedUTCCount += 1 }
            return { $0.time = date }
        case "name": return { $0.name = value }
        default: return nil
        }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        guard failure == nil else { return }
        failure = .malformedXML("not well-formed XML: \(GPXReader.describe(parseError))",
                                file: file, line: parser.lineNumber, column: parser.columnNumber)
    }
}
