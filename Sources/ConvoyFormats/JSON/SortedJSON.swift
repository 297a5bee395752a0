import ConvoyJSON
import Foundation
import Synchronization

/// `JSONSerialization.data(withJSONObject:options: [.sortedKeys])`'s text,
/// byte for byte, written without it for the values the frames carry
/// (strings, integers, booleans, null, arrays and objects of them):
/// Foundation sorts each object's keys by comparing `AnyHashable`s through
/// `NSString` and bridges every value, which made a Realtime frame cost more
/// than the row it carries. A key set's order is Foundation's own, asked once
/// and kept; anything else (a fractional number, an unusual control
/// character, a type it does not know) is left to `JSONSerialization`, so the
/// text is always what it would have written.
public enum SortedJSON {
    /// Text already written as JSON, put in as it is (only `text(_:)`'s own writer understands it).
    public struct Raw: @unchecked Sendable {
        public var text: String
        public init(_ text: String) { self.text = text }
    }

    /// The sorted-keys JSON text of `value` (an array or object); nil where `JSONSerialization` would refuse it.
    public static func text(_ value: Any) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        if write(value, into: &out) { return String(decoding: out, as: UTF8.self) }
        guard !containsRaw(value), let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Writes `value`; false when it holds something only `JSONSerialization` should write.
    ///
    /// The common types are told apart by their dynamic type before any cast: a chain of casts
    /// (`as String`, `is NSNull`, …) has the runtime try each bridge in turn, and on Linux
    /// `is NSNull` bridged every dictionary it met to an `NSDictionary` to find it was not one
    /// (a sixth of `convoy serve`'s CPU in a fan-out).
    static func write(_ value: Any, into out: inout [UInt8]) -> Bool {
        let t = type(of: value)
        if t == String.self { return string(value as! String, into: &out) }
        if t == [String: Any].self { return object(value as! [String: Any], into: &out) }
        if t == [Any].self { return array(value as! [Any], into: &out) }
        if t == Raw.self {
            out.append(contentsOf: (value as! Raw).text.utf8)
            return true
        }
        if t is NSNull.Type {
            out.append(contentsOf: "null".utf8)
            return true
        }
        if number(value, of: t, into: &out) { return true }
        // Other shapes (`[String: String]`, `[Int]`, an `NSString`): the general casts.
        if let d = value as? [String: Any] { return object(d, into: &out) }
        if let a = value as? [Any] { return array(a, into: &out) }
        if let s = value as? String { return string(s, into: &out) }
        return false
    }

    private static func object(_ d: [String: Any], into out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "{"))
        var first = true
        for key in order(of: Array(d.keys)) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            guard string(key, into: &out) else { return false }
            out.append(UInt8(ascii: ":"))
            guard write(d[key]!, into: &out) else { return false }
        }
        out.append(UInt8(ascii: "}"))
        return true
    }

    private static func array(_ a: [Any], into out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "["))
        for (i, v) in a.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard write(v, into: &out) else { return false }
        }
        out.append(UInt8(ascii: "]"))
        return true
    }

    /// Integers and booleans as Foundation writes them; false for anything else (a fraction is Foundation's to format).
    private static func number(_ value: Any, of t: Any.Type, into out: inout [UInt8]) -> Bool {
        let text: String
        if t == Int.self { text = String(value as! Int) }
        else if t == Int64.self { text = String(value as! Int64) }
        else if t == Int32.self { text = String(value as! Int32) }
        else if t == UInt64.self { text = String(value as! UInt64) }
        else if t == Bool.self { text = (value as! Bool) ? "true" : "false" }
        else if t is NSNumber.Type, let n = value as? NSNumber {
            switch String(cString: n.objCType) {
            case "c", "B": text = n.boolValue ? "true" : "false"
            case "q", "l", "i", "s": text = String(n.int64Value)
            case "Q", "L", "I", "S", "C": text = String(n.uint64Value)
            default: return false
            }
        } else {
            return false
        }
        out.append(contentsOf: text.utf8)
        return true
    }

    /// A string with Foundation's escapes (`/` too), as `JSONValue` writes one.
    private static func string(_ s: String, into out: inout [UInt8]) -> Bool {
        JSONValue.write(string: s, into: &out)
        return true
    }

    private static func containsRaw(_ value: Any) -> Bool {
        switch value {
        case is Raw: true
        case let d as [String: Any]: d.values.contains(where: containsRaw)
        case let a as [Any]: a.contains(where: containsRaw)
        default: false
        }
    }

    // MARK: - Foundation's key order

    private static let orders = Mutex<[[String]: [String]]>([:])
    private static let maxOrders = 4096

    /// The keys in the order `JSONSerialization` writes them (numeric, case-insensitive), asked of it once per key set.
    static func order(of keys: [String]) -> [String] {
        if keys.count < 2 { return keys }
        let set = keys.sorted()
        if let known = orders.withLock({ $0[set] }) { return known }
        let probe = Dictionary(uniqueKeysWithValues: set.map { ($0, 0) })
        guard let data = try? JSONSerialization.data(withJSONObject: probe, options: [.sortedKeys]),
              case .object(let members)? = data.withUnsafeBytes({ JSONScanner.parse($0.bindMemory(to: UInt8.self)) }),
              members.count == set.count
        else { return set }
        let order = members.map(\.key)
        orders.withLock { if $0.count < maxOrders { $0[set] = order } }
        return order
    }
}
