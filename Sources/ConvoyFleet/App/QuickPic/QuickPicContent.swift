import ConvoyCrypto
import ConvoyGeo
import Foundation

/// What a QuickPic phone encrypts (quickpic-spec.md, "Encryption Flow" 1–2): a text as UTF-8, a photo as a
/// PNG, gzipped. Convoy's sequence number and send time ride inside, where the app's content has room for
/// them: a text starts with a tag line, a photo carries a `tEXt` chunk (as a camera carries its maker).
/// The recipient checks what it decrypts against the message's `content_type` (a server could relabel it:
/// the type is not signed).
enum QuickPicContent {
    /// A photo is at most this after gzip (the spec's 5 MB limit, as the server counts it: 5 MiB).
    static let largest = 5 * 1024 * 1024
    static let keyword = "Convoy"
    /// zlib level 1 for the PNG and the gzip: the noise Convoy sends does not compress at any level, so a
    /// higher one would spend the harness's CPU (≈ 5× as much) for the same bytes.
    static let pngLevel: Int32 = 1
    static let gzipLevel: Int32 = 1

    /// The bytes `message` encodes to, `message.size` long for a text, and within a few hundred bytes of it for a photo.
    static func encode(_ message: DirectMessage, seed: UInt64) throws(ContentError) -> [UInt8] {
        let tag = "seq=\(message.seq) sent_ns=\(message.sentNanos)"
        switch message.kind {
        case .text:
            var text = Array("[convoy \(tag)]\n".utf8)
            let filler = Array("Meet at the usual place at eight? Bring the blue umbrella. ".utf8)
            var i = 0
            while text.count < message.size {
                text.append(filler[i % filler.count])
                i += 1
            }
            return text
        case .photo:
            // Pixels of noise: a camera's photo compresses losslessly by a little; noise does not at all,
            // so the file is as big as its pixels and the size drawn is the size sent.
            let side = max(1, Int((Double(max(message.size - 200, 3)) / 3).squareRoot()))
            var pixels = [UInt8](repeating: 0, count: side * side * 3)
            var g = SeededGenerator(seed: seed, stream: 0x9A6)
            var j = 0
            while j < pixels.count {
                var word = g.next()
                for _ in 0..<min(8, pixels.count - j) {
                    pixels[j] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    j += 1
                }
            }
            let png = try PNGImage(width: side, height: side, text: [keyword: tag]).encode(pixels: pixels, level: pngLevel)
            return try Gzip.compress(png, level: gzipLevel)
        }
    }

    /// What a recipient reads back: the kind its label says, checked against the content, and Convoy's tag.
    static func decode(_ bytes: [UInt8], kind: DirectMessage.Kind) throws(ContentError) -> DirectMessage {
        let tag: String
        switch kind {
        case .text:
            guard bytes.first != 0x1F, let text = String(validating: bytes.prefix(200), as: UTF8.self) ?? String(validating: bytes, as: UTF8.self),
                  text.hasPrefix("[convoy "), let end = text.firstIndex(of: "]")
            else { throw ContentError("a text message that is not Convoy's text (labelled text, is it a photo?)") }
            tag = String(text[text.index(text.startIndex, offsetBy: 8)..<end])
        case .photo:
            let png = try Gzip.decompress(bytes, limit: largest * 2)
            guard let t = try PNGImage.read(png).text[keyword] else { throw ContentError("a photo without Convoy's tEXt chunk") }
            tag = t
        }
        var fields: [String: String] = [:]
        for part in tag.split(separator: " ") {
            let kv = part.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { fields[String(kv[0])] = String(kv[1]) }
        }
        guard let seq = fields["seq"].flatMap({ UInt64($0) }), let sent = fields["sent_ns"].flatMap({ Int64($0) }) else {
            throw ContentError("Convoy's tag lacks seq or sent_ns: \"\(tag.prefix(80))\"")
        }
        return DirectMessage(kind: kind, seq: seq, sentNanos: sent, size: bytes.count)
    }
}
