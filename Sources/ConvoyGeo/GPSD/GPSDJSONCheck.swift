/// What of a gpsd line is checked before libgps reads it: that it is one JSON object (RFC 8259's grammar, nothing
/// after it but spaces), and its `class`. libgps 3.22 (Debian 12) never returns from `gps_unpack` on some lines: one
/// cut inside a string, one whose key lost its quote (`{"class":"TPV"eph":…}`), and a well-formed DEVICES whose
/// list has a name libgps does not know (`{"class":"DEVICES","deviceS":[{…}]}`, as a newer gpsd could send), and a
/// TPV carrying a DEVICES list all spin in its JSON reader at full CPU. The gpsd fuzz target found the four. So a
/// line that is no object is skipped, as one libgps refuses is, and only the two classes Convoy reads (TPV and SKY)
/// reach libgps, with lists of objects only as SKY's satellites (`isReadable`). Only the grammar is checked (no
/// values are made): a line a second is nothing to the live source.
enum GPSDJSONCheck {
    /// Deeper than gpsd ever nests (a DEVICES list of objects is 3): refused.
    static let maxDepth = 16

    static func isObject(_ line: [UInt8]) -> Bool { objectClass(line) != nil }

    /// The line's top-level `class` when it is one JSON object ("" when it has none); nil when it is not one.
    static func objectClass(_ line: [UInt8]) -> String? { read(line)?.kind }

    /// Whether libgps may read `line`: a TPV with no list of objects in it, or a SKY whose only list of objects is
    /// its `satellites`. libgps also spun on a TPV carrying a DEVICES list (`"devices":[{…}]`): it reads a list of
    /// objects by the name it knows from another class.
    static func isReadable(_ line: [UInt8]) -> Bool {
        guard let (kind, lists) = read(line) else { return false }
        switch kind {
        case "TPV": return lists.isEmpty
        case "SKY": return lists.allSatisfy { $0 == "satellites" }
        default: return false
        }
    }

    /// The class, and for each list holding an object the top-level member it is in ("" deeper than that).
    private static func read(_ line: [UInt8]) -> (kind: String, lists: [String])? {
        var reader = Reader(bytes: line)
        reader.skipSpace()
        guard reader.peek == UInt8(ascii: "{"), reader.value(depth: 0) else { return nil }
        reader.skipSpace()
        guard reader.at == line.count else { return nil }
        return (reader.topClass.map { String(decoding: line[$0], as: UTF8.self) } ?? "", reader.listsOfObjects)
    }

    private struct Reader {
        let bytes: [UInt8]
        var at = 0
        /// Where the top-level object's `class` string is (its text between the quotes).
        var topClass: Range<Int>?
        /// The top-level member being read, and the members (or "", deeper) whose list holds an object.
        var topKey = ""
        var listsOfObjects: [String] = []

        var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

        mutating func skipSpace() {
            while let b = peek, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { at += 1 }
        }

        mutating func take(_ b: UInt8) -> Bool {
            guard peek == b else { return false }
            at += 1
            return true
        }

        mutating func value(depth: Int) -> Bool {
            skipSpace()
            guard let b = peek else { return false }
            switch b {
            case UInt8(ascii: "{"):
                guard depth < GPSDJSONCheck.maxDepth else { return false }
                at += 1
                skipSpace()
                if take(UInt8(ascii: "}")) { return true }
                repeat {
                    skipSpace()
                    let keyStart = at + 1
                    guard string() else { return false }
                    let isClass = depth == 0 && bytes[keyStart..<(at - 1)].elementsEqual("class".utf8)
                    if depth == 0 { topKey = String(decoding: bytes[keyStart..<(at - 1)], as: UTF8.self) }
                    skipSpace()
                    guard take(UInt8(ascii: ":")) else { return false }
                    skipSpace()
                    let valueStart = at
                    guard value(depth: depth + 1) else { return false }
                    if isClass, bytes[valueStart] == UInt8(ascii: "\"") { topClass = (valueStart + 1)..<(at - 1) }
                    skipSpace()
                } while take(UInt8(ascii: ","))
                return take(UInt8(ascii: "}"))
            case UInt8(ascii: "["):
                guard depth < GPSDJSONCheck.maxDepth else { return false }
                at += 1
                skipSpace()
                if take(UInt8(ascii: "]")) { return true }
                repeat {
                    skipSpace()
                    if peek == UInt8(ascii: "{") { listsOfObjects.append(depth == 1 ? topKey : "") }
                    guard value(depth: depth + 1) else { return false }
                    skipSpace()
                } while take(UInt8(ascii: ","))
                return take(UInt8(ascii: "]"))
            case UInt8(ascii: "\""):
                return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default:
                return number()
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            guard at + w.count <= bytes.count, bytes[at..<(at + w.count)].elementsEqual(w) else { return false }
            at += w.count
            return true
        }

        /// A string: no control characters, only JSON's escapes.
        mutating func string() -> Bool {
            guard take(UInt8(ascii: "\"")) else { return false }
            while let b = peek {
                at += 1
                switch b {
                case UInt8(ascii: "\""):
                    return true
                case UInt8(ascii: "\\"):
                    guard let e = peek else { return false }
                    at += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                         UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        continue
                    case UInt8(ascii: "u"):
                        for _ in 0..<4 {
                            guard let h = peek, h.isHexDigit else { return false }
                            at += 1
                        }
                    default:
                        return false
                    }
                case 0..<0x20:
                    return false
                default:
                    continue
                }
            }
            return false
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func number() -> Bool {
            _ = take(UInt8(ascii: "-"))
            if !take(UInt8(ascii: "0")) {
                guard digits() else { return false }
            }
            if take(UInt8(ascii: ".")) { guard digits() else { return false } }
            if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
                if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
                guard digits() else { return false }
            }
            return true
        }

        /// One or more digits.
        mutating func digits() -> Bool {
            let start = at
            while let b = peek, b >= 0x30 && b <= 0x39 { at += 1 }
            return at > start
        }
    }
}

private extension UInt8 {
    var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self) }
}
