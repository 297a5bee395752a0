import Synchronization

/// A response made once per published second and served to every reader of that second (`/api/map`): however many
/// pages ask, and however often, the run encodes it once a tick (a reader that asks again within the second gets the
/// same bytes, not new work), and gzips it once when a reader accepts gzip. `encodes` and `compressions` count them.
public final class DashboardBytes: Sendable {
    private struct Made {
        var key: Int
        var plain: [UInt8]
        var gzip: [UInt8]?
    }

    private let made = Mutex<Made?>(nil)
    private let counts = Mutex((encodes: 0, compressions: 0))
    private let compress: @Sendable ([UInt8]) -> [UInt8]?

    /// `compress`: gzip (nil when it cannot).
    public init(compress: @escaping @Sendable ([UInt8]) -> [UInt8]?) {
        self.compress = compress
    }

    public var encodes: Int { counts.withLock { $0.encodes } }
    public var compressions: Int { counts.withLock { $0.compressions } }

    /// The key of what a feed has published: its seconds, and whether it has ended (the map is drawn once more then).
    public static func key(_ feed: DashboardFeed) -> Int { feed.published * 2 + (feed.end == nil ? 0 : 1) }

    /// The bytes already made for `key` (gzipped, if `gzip` and gzip can be made), or nil: none made for it yet.
    public func cached(for key: Int, gzip: Bool) -> (body: [UInt8], gzip: Bool)? {
        made.withLock { m in
            guard let current = m, current.key == key else { return nil }
            return served(&m, gzip: gzip)
        }
    }

    /// Keeps `plain` as `key`'s bytes (unless another reader made them first: theirs are served) and serves them.
    public func store(_ plain: [UInt8], for key: Int, gzip: Bool) -> (body: [UInt8], gzip: Bool) {
        made.withLock { m in
            if m?.key != key {
                counts.withLock { $0.encodes += 1 }
                m = Made(key: key, plain: plain, gzip: nil)
            }
            return served(&m, gzip: gzip) ?? (plain, false)
        }
    }

    private func served(_ m: inout Made?, gzip: Bool) -> (body: [UInt8], gzip: Bool)? {
        guard var current = m else { return nil }
        guard gzip else { return (current.plain, false) }
        if current.gzip == nil, let packed = compress(current.plain) {
            counts.withLock { $0.compressions += 1 }
            current.gzip = packed
            m = current
        }
        return current.gzip.map { ($0, true) } ?? (current.plain, false)
    }
}
