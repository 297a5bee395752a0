import ConvoyJSON
import Foundation

extension JSONValue {
    /// A value as `JSONSerialization` or a YAML reader hands it over (String, NSNumber, Bool, NSNull, arrays and
    /// dictionaries of them), typed at the edge where such a value enters (a probe catalogue's payload); nil for
    /// anything JSON cannot hold. Objects' keys are sorted.
    public init?(foundation value: Any) {
        switch value {
        case let s as String: self = .string(s)
        case is NSNull: self = .null
        case let n as NSNumber:
            switch String(cString: n.objCType) {
            case "c", "B": self = .bool(n.boolValue)
            case "q", "l", "i", "s": self = .number(String(n.int64Value))
            case "Q", "L", "I", "S", "C": self = .number(String(n.uint64Value))
            default: self.init(n.doubleValue)
            }
        case let d as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (k, v) in d {
                guard let j = JSONValue(foundation: v) else { return nil }
                members[k] = j
            }
            self.init(members)
        case let a as [Any]:
            var items: [JSONValue] = []
            for v in a {
                guard let j = JSONValue(foundation: v) else { return nil }
                items.append(j)
            }
            self = .array(items)
        default:
            return nil
        }
    }
}
