internal import CZlib

/// Why content could not be encoded or read back (a gzip stream or a PNG that is not one).
public struct ContentError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// gzip (RFC 1952) through zlib: what QuickPic does to a photo before it encrypts it
/// (quickpic-spec.md, "PNG → gzip compress").
public enum Gzip {
    /// `bytes` as one gzip member; `level` is zlib's (1 fastest … 9 smallest, 6 its default).
    public static func compress(_ bytes: [UInt8], level: Int32 = 6) throws(ContentError) -> [UInt8] {
        try Zlib.deflate(bytes, level: level, windowBits: 15 + 16)
    }

    /// The bytes of a gzip stream, refused past `limit` (a small stream can inflate to gigabytes).
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(ContentError) -> [UInt8] {
        guard bytes.count >= 18, bytes[0] == 0x1F, bytes[1] == 0x8B else { throw ContentError("not a gzip stream") }
        return try Zlib.inflate(bytes, windowBits: 15 + 16, limit: limit)
    }
}

/// zlib's deflate and inflate, one call each (windowBits picks the wrapper: 15 zlib, 15 + 16 gzip).
enum Zlib {
    static func deflate(_ bytes: [UInt8], level: Int32, windowBits: Int32) throws(ContentError) -> [UInt8] {
        var stream = z_stream()
        guard convoy_deflate_init2(&stream, level, windowBits) == Z_OK else { throw ContentError("zlib would not start deflating") }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(bytes.count))) + 32
        var out = [UInt8](repeating: 0, count: bound)
        var input = bytes
        let rc: Int32 = input.withUnsafeMutableBufferPointer { i in
            out.withUnsafeMutableBufferPointer { o in
                stream.next_in = i.baseAddress
                stream.avail_in = uInt(i.count)
                stream.next_out = o.baseAddress
                stream.avail_out = uInt(o.count)
                return CZlib.deflate(&stream, Z_FINISH)
            }
        }
        guard rc == Z_STREAM_END else { throw ContentError("zlib deflate failed (\(rc))") }
        out.removeLast(out.count - Int(stream.total_out))
        return out
    }

    static func inflate(_ bytes: [UInt8], windowBits: Int32, limit: Int) throws(ContentError) -> [UInt8] {
        var stream = z_stream()
        guard convoy_inflate_init2(&stream, windowBits) == Z_OK else { throw ContentError("zlib would not start inflating") }
        defer { inflateEnd(&stream) }
        var input = bytes
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var rc: Int32 = Z_OK
        try input.withUnsafeMutableBufferPointer { (i) throws(ContentError) in
            stream.next_in = i.baseAddress
            stream.avail_in = uInt(i.count)
            while rc == Z_OK {
                let produced: Int = chunk.withUnsafeMutableBufferPointer { o in
                    stream.next_out = o.baseAddress
                    stream.avail_out = uInt(o.count)
                    rc = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return o.count - Int(stream.avail_out)
                }
                guard rc == Z_OK || rc == Z_STREAM_END else { throw ContentError("corrupt compressed data (zlib \(rc))") }
                guard out.count + produced <= limit else { throw ContentError("inflates past \(limit) bytes") }
                out += chunk.prefix(produced)
                if rc == Z_OK, produced == 0, stream.avail_in == 0 { throw ContentError("the compressed data is truncated") }
            }
            guard stream.avail_in == 0 else { throw ContentError("bytes after the end of the compressed data") }
        }
        return out
    }

    /// CRC-32 (PNG's chunk check, gzip's trailer).
    static func crc32(_ bytes: some Collection<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        Array(bytes).withUnsafeBufferPointer { UInt32(CZlib.crc32(uLong(crc), $0.baseAddress, uInt($0.count))) }
    }
}
