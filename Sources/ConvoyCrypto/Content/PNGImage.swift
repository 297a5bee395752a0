/// A PNG (ISO/IEC 15948) as QuickPic's camera makes one: 8-bit RGB, its pixels deflated by zlib, and text
/// chunks (`tEXt`) for what the picture carries besides (Convoy puts its sequence number and send time in
/// one, as a camera puts its maker). Only what a sender makes and a recipient checks: no palettes, no
/// interlacing, no colour management.
public struct PNGImage: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// `tEXt` chunks, keyword → text (Latin-1 keywords of 1–79 bytes).
    public var text: [String: String]

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    public init(width: Int, height: Int, text: [String: String] = [:]) {
        (self.width, self.height, self.text) = (width, height, text)
    }

    /// The file: `pixels` (RGB, row by row, `width * height * 3` bytes) filtered with filter 0 and deflated at `level`.
    public func encode(pixels: [UInt8], level: Int32 = 6) throws(ContentError) -> [UInt8] {
        guard width > 0, height > 0, pixels.count == width * height * 3 else {
            throw ContentError("a \(width)×\(height) RGB image needs \(width * height * 3) bytes, not \(pixels.count)")
        }
        var raw: [UInt8] = []
        raw.reserveCapacity(pixels.count + height)
        let row = width * 3
        for y in 0..<height {
            raw.append(0)
            raw += pixels[(y * row)..<((y + 1) * row)]
        }
        var file = Self.signature
        var header: [UInt8] = []
        header += Self.bigEndian(UInt32(width)) + Self.bigEndian(UInt32(height))
        header += [8, 2, 0, 0, 0]  // 8 bits, truecolour, deflate, filter method 0, no interlace
        Self.chunk("IHDR", header, into: &file)
        for (keyword, value) in text.sorted(by: { $0.key < $1.key }) {
            Self.chunk("tEXt", Array(keyword.utf8) + [0] + Array(value.utf8), into: &file)
        }
        Self.chunk("IDAT", try Zlib.deflate(raw, level: level, windowBits: 15), into: &file)
        Self.chunk("IEND", [], into: &file)
        return file
    }

    /// Reads a PNG's header and text chunks, checking its signature, every chunk's CRC, and that its image
    /// data is there and ends with `IEND` (the pixels are not inflated: a recipient shows them, Convoy counts them).
    public static func read(_ file: [UInt8]) throws(ContentError) -> PNGImage {
        guard file.count >= 8, Array(file.prefix(8)) == signature else { throw ContentError("not a PNG (bad signature)") }
        var at = 8
        var image: PNGImage?
        var sawData = false
        while at + 12 <= file.count {
            let length = Int(bigEndian(file, at))
            let typeStart = at + 4, dataStart = at + 8
            guard length <= file.count - dataStart - 4 else { throw ContentError("a PNG chunk runs past the end of the file") }
            let type = String(decoding: file[typeStart..<dataStart], as: UTF8.self)
            let data = Array(file[dataStart..<(dataStart + length)])
            guard crc(type, data) == bigEndian(file, dataStart + length) else { throw ContentError("PNG chunk \(type) fails its CRC") }
            switch type {
            case "IHDR":
                guard length == 13 else { throw ContentError("PNG IHDR is \(length) bytes, not 13") }
                image = PNGImage(width: Int(bigEndian(data, 0)), height: Int(bigEndian(data, 4)))
            case "tEXt":
                guard let nul = data.firstIndex(of: 0), image != nil else { throw ContentError("a PNG tEXt chunk without a keyword") }
                image!.text[String(decoding: data[..<nul], as: UTF8.self)] = String(decoding: data[(nul + 1)...], as: UTF8.self)
            case "IDAT": sawData = true
            case "IEND":
                guard let image, sawData else { throw ContentError("a PNG without a header or image data") }
                guard dataStart + length + 4 == file.count else { throw ContentError("bytes after the PNG's IEND") }
                return image
            default: break
            }
            at = dataStart + length + 4
        }
        throw ContentError("the PNG ends before its IEND chunk")
    }

    private static func chunk(_ type: String, _ data: [UInt8], into file: inout [UInt8]) {
        file += bigEndian(UInt32(data.count)) + Array(type.utf8) + data + bigEndian(crc(type, data))
    }

    private static func crc(_ type: String, _ data: [UInt8]) -> UInt32 {
        Zlib.crc32(data, continuing: Zlib.crc32(Array(type.utf8)))
    }

    private static func bigEndian(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    private static func bigEndian(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3])
    }
}
