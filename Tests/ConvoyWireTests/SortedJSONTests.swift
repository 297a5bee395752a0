import Foundation
import Testing

@testable import ConvoyFormats
@testable import ConvoyWire

/// `SortedJSON` writes exactly what `JSONSerialization` writes with sorted keys, whatever it is given.
@Suite struct SortedJSONTests {
    /// ConvoyWire's seeded generator (SplitMix64), so a failure names a seed that reproduces it.
    struct Rand {
        var mix: SplitMix
        init(state: UInt64) { mix = SplitMix(seed: state) }
        mutating func next() -> UInt64 { mix.next() }
        mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    static let keys = ["a", "A", "b", "B", "a9", "a10", "a2b", "user_id", "username", "userName", "_x", "x_", "Z", "é", "ÿz",
                       "commit_timestamp", "columns", "errors", "record", "old_record", "schema", "table", "type", "ids", "data", "1", "10", "2"]
    static let pieces = ["", "plain", "a/b", "q\"uote", "back\\slash", "new\nline", "\r\t", "\u{8}\u{c}", "\u{1}\u{1f}", "\u{7f}", "é😀", "AbC+/=",
                         "2026-11-27T10:00:00.123+00:00"]

    static func value(_ r: inout Rand, depth: Int) -> Any {
        switch r.int(depth > 2 ? 8 : 10) {
        case 0: return pieces[r.int(pieces.count)] + pieces[r.int(pieces.count)]
        case 1: return Int(r.next() % 2_000_000) - 1_000_000
        case 2: return Int64(bitPattern: r.next())
        case 3: return NSNumber(value: r.int(2) == 0)
        case 4: return NSNumber(value: Int64(r.int(1000)) - 500)
        case 5: return NSNull()
        case 6: return r.int(2) == 0
        case 7: return [0.5, 1e-7, 3.0, -0.0, 1e20][r.int(5)]  // Foundation's to format: the whole text is left to it
        case 8: return (0..<r.int(4)).map { _ in value(&r, depth: depth + 1) }
        default: return object(&r, depth: depth + 1)
        }
    }

    static func object(_ r: inout Rand, depth: Int) -> [String: Any] {
        var o: [String: Any] = [:]
        for _ in 0..<r.int(7) { o[keys[r.int(keys.count)]] = value(&r, depth: depth) }
        return o
    }

    @Test(arguments: 0..<40)
    func writesWhatJSONSerializationWrites(seed: Int) throws {
        var r = Rand(state: UInt64(seed))
        for _ in 0..<50 {
            let o = Self.object(&r, depth: 0)
            let expected = String(decoding: try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys]), as: UTF8.self)
            #expect(SortedJSON.text(o) == expected, "seed \(seed)")
        }
    }

    @Test func theFastWriterTakesTheCommonFrames() {
        var out: [UInt8] = []
        let change: [String: Any] = ["type": "INSERT", "table": "t", "record": ["id": Int64(7), "payload": "AbC+/=", "n": NSNull()] as [String: Any],
                                     "columns": [["name": "id", "type": "int8"]], "errors": NSNull()]
        #expect(SortedJSON.write(change, into: &out))
        var fraction: [UInt8] = []
        #expect(!SortedJSON.write(["x": 1.5], into: &fraction))
    }

    @Test func rawTextGoesInAsItIs() throws {
        let data: [String: Any] = ["record": ["id": 1], "type": "INSERT"]
        let written = try #require(SortedJSON.text(data))
        let wrapped = SortedJSON.text(["topic": "realtime:a", "payload": ["ids": [3], "data": SortedJSON.Raw(written)]])
        let whole = String(decoding: try JSONSerialization.data(withJSONObject: ["topic": "realtime:a", "payload": ["ids": [3], "data": data]],
                                                               options: [.sortedKeys]), as: UTF8.self)
        #expect(wrapped == whole)
        // Raw text cannot go to Foundation: where the fast writer cannot write, there is no text.
        #expect(SortedJSON.text(["x": 1.5, "y": SortedJSON.Raw("1")]) == nil)
    }
}
