import ConvoySodium
import Foundation

extension LocationPayload {
    fileprivate enum Key: String, CodingKey {
        case lat, lon, ts, acc, seq, fix
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
        text += "}"
        return Array(text.utf8)
    }

    /// Parses and validates a plaintext. Unknown keys are allowed; missing keys,
    /// wrong types and out-of-range values are errors that name the key.
    public init(jsonBytes bytes: some Collection<UInt8>) throws(CryptoError) {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw Self.describe(error)
        } catch {
            throw .badJSON("the plaintext is not JSON: \(error)")
        }
        self = wire.payload
        try validate()
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
            payload = p
        }
    }
}
