import Foundation

/// A GPX file's bytes on their way to XMLParser, checked to be UTF-8 first.
///
/// Foundation's XMLParser on Linux asks libxml2 to recover from errors, and libxml2 then hands it an element or
/// attribute name holding bytes that are not UTF-8; XMLParser force-unwraps that name as a String and the process
/// traps (`_NSXMLParserStartElementNs`, swift-corelibs-foundation). The gpx fuzz target found it with a `<tr\xFF…>`
/// tag. So the bytes are checked here, as they stream: at the first one that is not UTF-8 the read fails, and
/// `failure` says where (line and column, counted in bytes as libxml2 counts them).
///
/// A document that says it is in another encoding (UTF-16 by its byte-order mark, or an `encoding=` naming a
/// single-byte one such as ISO-8859-1 or windows-1252) is passed on unchecked: libxml2 converts it to UTF-8 itself.
final class UTF8CheckedStream: InputStream {
    struct Failure { let line: Int, column: Int, byte: UInt8 }

    private let inner: InputStream
    private var checking: Bool?
    /// The bytes of a sequence a read ended inside, completed by the next read.
    private var pending: [UInt8] = []
    private var (line, column) = (1, 1)
    private(set) var failure: Failure?

    init(_ inner: InputStream) {
        self.inner = inner
        super.init(data: Data())
    }

    override func open() { inner.open() }
    override func close() { inner.close() }
    override var hasBytesAvailable: Bool { failure == nil && inner.hasBytesAvailable }
    /// Asked by XMLParser when a read fails. (InputStream's own getter traps on a stream with no error: only a failed
    /// inner stream is asked.)
    override var streamError: (any Error)? {
        if let failure { return CocoaError(.fileReadInapplicableStringEncoding, userInfo: [NSLocalizedDescriptionKey: "byte \(failure.byte) is not UTF-8"]) }
        return inner.streamStatus == .error ? inner.streamError : nil
    }
    override var streamStatus: Stream.Status { inner.streamStatus }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard failure == nil else { return -1 }
        let n = inner.read(buffer, maxLength: len)
        guard n >= 0 else { return n }
        let bytes = UnsafeBufferPointer(start: buffer, count: n)
        if checking == nil { checking = Self.needsChecking(Array(bytes.prefix(512))) }
        guard checking == true else { return n }
        if n == 0 {
            // The end: a sequence left open is cut short.
            if let first = pending.first { failure = Failure(line: line, column: column, byte: first); return -1 }
            return 0
        }
        // In place, unless the last read ended inside a sequence: then that sequence and this read's bytes.
        return (pending.isEmpty ? check(bytes) : check(pending + bytes)) ? n : -1
    }

    /// Checks `bytes`, keeping a sequence they end inside for the next read.
    private func check<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes) -> Bool where Bytes.Index == Int {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                if encoded.count == 1 && encoded.first == UInt8(ascii: "\n") { (line, column) = (line + 1, 1) } else { column += encoded.count }
                offset += encoded.count
            case .error:
                // At the very end, a lead byte and some of its continuation bytes: the next read may complete it.
                if offset + Self.expectedLength(bytes[offset]) > bytes.count, Self.continues(bytes[(offset + 1)...]) {
                    pending = Array(bytes[offset...])
                    return true
                }
                failure = Failure(line: line, column: column, byte: bytes[offset])
                return false
            case .emptyInput:
                pending = []
                return true
            }
        }
    }

    /// How long a sequence that starts with `lead` is (1 for a byte that cannot start one).
    private static func expectedLength(_ lead: UInt8) -> Int {
        switch lead {
        case 0xC2...0xDF: 2
        case 0xE0...0xEF: 3
        case 0xF0...0xF4: 4
        default: 1
        }
    }

    private static func continues(_ bytes: some Sequence<UInt8>) -> Bool { bytes.allSatisfy { $0 & 0xC0 == 0x80 } }

    /// False for a document in an encoding libxml2 converts: a UTF-16 (or UTF-32) byte-order mark, or a declaration
    /// naming a single-byte encoding or UTF-16.
    static func needsChecking(_ head: [UInt8]) -> Bool {
        if head.starts(with: [0xFE, 0xFF]) || head.starts(with: [0xFF, 0xFE]) || head.starts(with: [0, 0]) || head.starts(with: [0x3C, 0]) || head.starts(with: [0, 0x3C]) {
            return false
        }
        let text = String(decoding: head, as: UTF8.self)
        guard text.hasPrefix("<?xml") || text.hasPrefix("\u{FEFF}<?xml"), let end = text.range(of: "?>"),
              let key = text[..<end.lowerBound].range(of: "encoding") else { return true }
        let rest = text[key.upperBound..<end.lowerBound].drop { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "'" }
        let name = rest.prefix { $0 != "\"" && $0 != "'" && $0 != " " }.lowercased()
        let converted = name.hasPrefix("iso-8859") || name.hasPrefix("iso8859") || name.hasPrefix("windows-125")
            || name.hasPrefix("cp125") || name == "latin1" || name == "latin-1" || name.hasPrefix("utf-16") || name.hasPrefix("utf16")
        return !converted
    }
}
