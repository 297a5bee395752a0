import ConvoyGeo
import Foundation
import Testing

/// Bytes that are not UTF-8 in a GPX file (the gpx fuzz target's crash: XMLParser trapped on a tag name holding 0xFF)
/// are refused with the place they are at; UTF-8 split across the reader's chunks, and files in an encoding they
/// name, still read.
@Suite struct GPXEncodingTests {
    static let head = #"<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">"#

    @Test func aNameThatIsNotUTF8IsRefusedWhereItIs() {
        var bytes = Array((Self.head + "\n<trk><tr").utf8) + [0xFF, 0xFF] + Array("kseg></trkseg></trk></gpx>".utf8)
        do {
            _ = try GPXReader.read(data: Data(bytes), file: "odd.gpx")
            Issue.record("accepted a tag name that is not UTF-8")
        } catch {
            #expect(error == .malformedXML && error.file == "odd.gpx" && error.line == 2 && error.column == 9, "\(error)")
            #expect(error.description.contains("0xFF is not UTF-8"), "\(error)")
        }
        // A sequence cut short at the end of the file, and a surrogate's encoding (ED A0 80), are not UTF-8 either.
        bytes = Array((Self.head + "<trk><name>x").utf8) + [0xE2, 0x82]
        #expect(throws: GeoError.malformedXML) { try GPXReader.read(data: Data(bytes)) }
        bytes = Array((Self.head + "<trk><name>").utf8) + [0xED, 0xA0, 0x80] + Array("</name></trk></gpx>".utf8)
        #expect(throws: GeoError.malformedXML) { try GPXReader.read(data: Data(bytes)) }
    }

    /// The control: the same tag in UTF-8, characters of two, three and four bytes across the reader's 128-KiB chunks,
    /// and a file in ISO-8859-1 that says so.
    @Test func utf8AcrossChunksAndANamedEncodingRead() throws {
        var text = Self.head + "<trk><name>Cerkniško jezero 🏔</name><trkseg>"
        var n = 0
        // A four-byte character across the first chunk's end, a three-byte one across the second's, a two-byte one
        // across the third's (XMLParser reads 131,072 bytes at a time).
        for (boundary, character) in [(131_072, "𝄞"), (262_144, "€"), (393_216, "č")] {
            while text.utf8.count < boundary - 200 {
                text += "<trkpt lat=\"46.\(n)\" lon=\"14.5\"><desc>čšž €€ 𝄞 padding</desc></trkpt>\n"
                n += 1
            }
            let open = "<trkpt lat=\"46.\(n)\" lon=\"14.5\"><desc>"
            n += 1
            text += open + String(repeating: "x", count: boundary - 1 - text.utf8.count - open.utf8.count) + character + "</desc></trkpt>\n"
            let at = text.utf8.count - "</desc></trkpt>\n".utf8.count - character.utf8.count
            #expect(at < boundary && at + character.utf8.count > boundary)
        }
        text += "</trkseg></trk></gpx>"
        let path = try TrackReaderLimitTests.temporaryFile("chunks.gpx", text)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let document = try GPXReader.read(contentsOf: path)
        #expect(document.tracks.first?.name == "Cerkniško jezero 🏔" && document.tracks.first?.segments.first?.count == n)
        let latin1 = Array(#"<?xml version="1.0" encoding="ISO-8859-1"?><gpx version="1.1" creator="t"><trk><name>Cerkni"#.utf8)
            + [0xE8, 0x6B, 0x6F] + Array("</name><trkseg><trkpt lat=\"1\" lon=\"2\"/></trkseg></trk></gpx>".utf8)
        #expect(try GPXReader.read(data: Data(latin1)).tracks.first?.name == "Cerknièko")
    }
}
