import ConvoyJSON

/// What of a gpsd line is checked before libgps reads it: that it is one JSON object (ConvoyJSON's strict reader,
/// nothing after it but spaces), its `class`, and its lists of objects. libgps 3.22 (Debian 12) never returns from
/// `gps_unpack` on some lines: one cut inside a string, one whose key lost its quote (`{"class":"TPV"eph":…}`), a
/// well-formed DEVICES whose list has a name libgps does not know (`{"class":"DEVICES","deviceS":[{…}]}`, as a newer
/// gpsd could send), and a TPV carrying a DEVICES list all spin in its JSON reader at full CPU. The gpsd fuzz target
/// found the four. So a line that is no object is skipped, as one libgps refuses is, and only the two classes Convoy
/// reads (TPV and SKY) reach libgps, with lists of objects only as SKY's satellites (`isReadable`). A line a second
/// is read twice: nothing to the live source.
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

    /// The class, and for each list holding an object the top-level member whose value it is ("" deeper than that).
    private static func read(_ line: [UInt8]) -> (kind: String, lists: [String])? {
        guard let value = JSONScanner.parse(line, maxDepth: maxDepth), case .object(let members) = value else { return nil }
        var lists: [String] = []
        for member in members { collectLists(member.value, named: member.key, into: &lists) }
        return (value["class"]?.string ?? "", lists)
    }

    private static func collectLists(_ value: JSONValue, named name: String, into lists: inout [String]) {
        switch value {
        case .array(let items):
            if items.contains(where: { if case .object = $0 { true } else { false } }) { lists.append(name) }
            for item in items { collectLists(item, named: "", into: &lists) }
        case .object(let members):
            for member in members { collectLists(member.value, named: "", into: &lists) }
        case .string, .number, .bool, .null:
            break
        }
    }
}
