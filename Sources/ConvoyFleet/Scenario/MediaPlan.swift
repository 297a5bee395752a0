import ConvoyMetrics
import Foundation
import Yams

/// A kind of chat media a group's phones send (survale-spec §6: photos and
/// short videos, auto-compressed), how often and how big.
public struct MediaPlan: Sendable, Equatable {
    public var kind: MediaKind
    /// Each phone sends one this often, drawn uniformly, seconds.
    public var every: ClosedRange<Double>
    /// Its size, drawn uniformly, bytes.
    public var size: ClosedRange<Int>

    public init(kind: MediaKind, every: ClosedRange<Double>, size: ClosedRange<Int>) { (self.kind, self.every, self.size) = (kind, every, size) }

    /// Photos of 2–3 MB (the spec's 2–3 MP, compressed); short clips of 5–15 MB (~720p, a few seconds).
    public static func defaultSize(_ kind: MediaKind) -> ClosedRange<Int> {
        switch kind {
        case .photo: 2_000_000...3_000_000
        case .video: 5_000_000...15_000_000
        }
    }

    /// The largest object a phone sends: Survale's bucket takes 50 MiB.
    public static let largest = 50 * 1_048_576
}

extension Reader {
    /// The group's media keys: `photo_every` with `photo_size`, `video_every` with `video_size`.
    static let mediaKeys = ["photo_every", "photo_size", "video_every", "video_size"]

    /// `photo_every: 3m..5m`, `photo_size: 2MB..3MB`; the same for videos. A size without its interval is an error.
    func mediaPlans(_ m: [String: Reader]) throws(ScenarioError) -> [MediaPlan] {
        var plans: [MediaPlan] = []
        for kind in MediaKind.allCases {
            let every = m["\(kind.rawValue)_every"], size = m["\(kind.rawValue)_size"]
            if let size, every == nil {
                throw size.error("\(kind.rawValue)_size applies with \(kind.rawValue)_every (how often each phone sends one, e.g. 3m..5m)")
            }
            guard let every else { continue }
            plans.append(MediaPlan(kind: kind, every: try every.range(), size: try size?.sizeRange() ?? MediaPlan.defaultSize(kind)))
        }
        return plans
    }

    /// `2MB..3MB`, or one size: bytes as a whole number or with a unit (`B`, `KB`, `MB`, `GB`, decimal as
    /// storage-api writes them; `KiB`, `MiB`, binary), at least one byte and at most 50 MiB.
    func sizeRange() throws(ScenarioError) -> ClosedRange<Int> {
        let s = try string()
        let parts = s.components(separatedBy: "..")
        guard parts.count <= 2, let low = Quantity.bytes(parts[0]), let high = parts.count == 2 ? Quantity.bytes(parts[1]) : low else {
            throw error("expected a size such as 2MB, 500KB or 1.5MiB, or an interval such as 2MB..3MB, found \"\(s)\"")
        }
        guard low >= 1, low <= high else { throw error("the sizes must be at least 1 byte and the smaller first, found \"\(s)\"") }
        guard high <= MediaPlan.largest else { throw error("at most 50 MiB (the media bucket's limit), found \"\(s)\"") }
        return low...high
    }
}

extension Quantity {
    /// Bytes: `2000`, `20KB`, `2.5MB`, `1GB` (decimal), `512KiB`, `1.5MiB` (binary); case-insensitive.
    public static func bytes(_ text: String) -> Int? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Double)] = [("kib", 1024), ("mib", 1_048_576), ("gib", 1_073_741_824), ("kb", 1e3), ("mb", 1e6), ("gb", 1e9), ("b", 1)]
        let (unit, factor) = units.first { t.hasSuffix($0.0) } ?? ("", 1)
        guard let n = number(String(t.dropLast(unit.count)).trimmingCharacters(in: .whitespaces)) else { return nil }
        let bytes = (n * factor).rounded()
        return bytes < 1e15 ? Int(bytes) : nil
    }
}
