import Foundation

/// One NMEA 0183 sentence: `$<talker><type>,<fields…>*<checksum>`.
struct NMEASentence: Hashable, Sendable {
    /// "GP", "GN", "GL", "II" …
    let talker: String
    /// "RMC", "GGA" …
    let type: String
    let fields: [Substring]

    enum ParseFailure: Error { case notASentence, missingChecksum, badChecksum, malformed }

    /// Parses one line; the checksum must be present and right.
    init(line raw: Substring) throws(ParseFailure) {
        let line = raw.trimmedASCII
        guard let first = line.first, first == "$" || first == "!" else { throw .notASentence }
        guard let star = line.lastIndex(of: "*") else { throw .missingChecksum }
        let body = line[line.index(after: line.startIndex)..<star]
        let given = line[line.index(after: star)...]
        guard given.count == 2, let expected = UInt8(given, radix: 16) else { throw .malformed }
        guard Self.checksum(body) == expected else { throw .badChecksum }
        let parts = body.split(separator: ",", omittingEmptySubsequences: false)
        guard let address = parts.first, address.count >= 5, address.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else { throw .malformed }
        talker = String(address.prefix(address.count - 3))
        type = String(address.suffix(3))
        fields = Array(parts.dropFirst())
    }

    /// XOR of the bytes between `$` and `*`.
    static func checksum(_ body: some StringProtocol) -> UInt8 {
        body.utf8.reduce(0) { $0 ^ $1 }
    }

    /// A full sentence line (without line ending) for `body` ("GPRMC,…").
    static func line(_ body: String) -> String {
        let cs = checksum(body)
        let hex = String(cs, radix: 16, uppercase: true)
        return "$\(body)*\(hex.count == 1 ? "0" + hex : hex)"
    }
}
