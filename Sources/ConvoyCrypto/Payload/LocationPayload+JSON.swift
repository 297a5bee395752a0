import ConvoyJSON
import ConvoySodium
import Foundation

extension LocationPayload {
    fileprivate enum Key: String, CodingKey {
        case lat, lon, ts, acc, seq, fix, heading, speed
        case sentNanos = "sent_ns"
    }

    /// The JSON text that is sealed: keys in the PRD's order, then Convoy's.
    /// Whole-second `ts` is written as an integer, as the PRD's example shows.
    public func jsonBytes() throws(CryptoError) -> [UInt8] {
        try validate()
        var text = "{\"lat\":\(Self.number(lat)),\"lon\":\(Self.number(lon)),\"ts\":\(Self.number(ts)),\"acc\":\(Self.number(acc))"
        if let seq { text += ",\"seq\":\(seq)" }
        if let sentNanos { text += ",\"sent_ns\":\(sentNanos)" }
        if reduced { text += ",\"fix\":\"reduced\"" }
        if let heading { text += ",\"heading\":\(Self.number(heading))" }
        if let speed { text += ",\"speed\":\(Self.number(speed))" }
        text += "}"
        return Array(text.utf8)
    }

    /// Parses and validates a plaintext. Unknown keys are allowed; missing keys,
    /// wrong types and out-of-range values are errors that name the key.
    public init(jsonBytes bytes: some Collection<UInt8>) throws(CryptoError) {
        // The common case, a well-formed payload, is read straight from the bytes; anything else goes to
        // `JSONDecoder` below, whose errors name the key.
        let scanned = bytes.withContiguousStorageIfAvailable { Self.scanned($0) } ?? Array(bytes).withUnsafeBufferPointer { Self.scanned($0) }
        if let scanned { self = scanned } else { self = try Self.decoded(bytes) }
        try validate()
    }

    /// What `JSONDecoder` reads (the general path; not validated).
    static func decoded(_ bytes: some Collection<UInt8>) throws(CryptoError) -> LocationPayload {
        do {
            return try JSONDecoder().decode(Wire.self, from: Data(bytes)).payload
        } catch let error as DecodingError {
            throw Self.describe(error)
        } catch {
            throw .badJSON("the plaintext is not JSON: \(error)")
        }
    }

    /// The payload as `Wire` decodes it, when every key it reads is there with the type it wants; nil otherwise.
    static func scanned(_ bytes: UnsafeBufferPointer<UInt8>) -> LocationPayload? {
        guard case .object(let members)? = JSONScanner.parse(bytes) else { return nil }
        var lat: Double?, lon: Double?, ts: Double?, acc: Double?
        var seq: UInt64?, sentNanos: Int64?, fix: String?, heading: Double?, speed: Double?
        for m in members {
            switch m.key {
            case "lat": lat = double(m.value)
            case "lon": lon = double(m.value)
            case "ts": ts = double(m.value)
            case "acc": acc = double(m.value)
            case "heading", "speed":
                if m.value == .null { continue }
                guard let v = double(m.value) else { return nil }
                if m.key == "heading" { heading = v } else { speed = v }
            case "seq", "sent_ns", "fix":
                if m.value == .null { continue }
                switch (m.key, m.value) {
                case ("seq", .number(let n)): guard let v = digitsOnly(n).flatMap({ UInt64($0) }) else { return nil }; seq = v
                case ("sent_ns", .number(let n)): guard digitsOnly(n) != nil, let v = Int64(n) else { return nil }; sentNanos = v
                case ("fix", .string(let f)): fix = f
                default: return nil
                }
            default: continue
            }
        }
        // A repeated key, a missing or mistyped one: the decoder's answer (and its error) is the one to give.
        guard let lat, let lon, let ts, let acc, Set(members.map(\.key)).count == members.count else { return nil }
        var p = LocationPayload(lat: lat, lon: lon, ts: ts, acc: acc)
        (p.seq, p.sentNanos, p.reduced, p.heading, p.speed) = (seq, sentNanos, fix == "reduced", heading, speed)
        return p
    }

    private static func double(_ value: JSONValue) -> Double? {
        guard case .number(let n) = value, let d = Double(n), d.isFinite else { return nil }
        return d
    }

    /// An integer literal (an optional minus, then digits); nil for a fraction or an exponent.
    private static func digitsOnly(_ literal: String) -> String? {
        let digits = literal.utf8.first == UInt8(ascii: "-") ? literal.utf8.dropFirst() : literal.utf8[...]
        return !digits.isEmpty && digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) ? literal : nil
    }

    /// Shortest round-tripping decimal; integers without a fraction.
    private static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    private static func describe(_ error: DecodingError) -> CryptoError {
        switch error {
        case .keyNotFound(let key, _):
            return .badJSON("the key \"\(key.stringValue)\" is missing", key: key.stringValue)
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let key = context.codingPath.last?.stringValue
            return .badJSON("the key \"\(key ?? "?")\" has the wrong type: \(context.debugDescription)", key: key)
        case .dataCorrupted(let context):
            if let key = context.codingPath.last?.stringValue {
                return .badJSON("the key \"\(key)\" is malformed: \(context.debugDescription)", key: key)
            }
            return .badJSON("the plaintext is not a JSON object: \(context.debugDescription)")
        @unknown default:
            return .badJSON("the plaintext is not the expected JSON")
        }
    }

    /// The decoding shape; unknown keys are skipped by `JSONDecoder`.
    private struct Wire: Decodable {
        let payload: LocationPayload

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Key.self)
            var p = LocationPayload(
                lat: try c.decode(Double.self, forKey: .lat),
                lon: try c.decode(Double.self, forKey: .lon),
                ts: try c.decode(Double.self, forKey: .ts),
                acc: try c.decode(Double.self, forKey: .acc))
            p.seq = try c.decodeIfPresent(UInt64.self, forKey: .seq)
            p.sentNanos = try c.decodeIfPresent(Int64.self, forKey: .sentNanos)
            p.reduced = try c.decodeIfPresent(String.self, forKey: .fix) == "reduced"
            p.heading = try c.decodeIfPresent(Double.self, forKey: .heading)
            p.speed = try c.decodeIfPresent(Double.self, forKey: .speed)
            payload = p
        }
    }
}
