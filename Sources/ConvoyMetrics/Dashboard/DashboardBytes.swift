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

    private struct State {
        var made: Made?
        var encodes = 0
        var compressions = 0
    }

    private let state = Mutex(State())
    private let compress: @Sendable ([UInt8]) -> [UInt8]?

    /// `compress`: gzip (nil when it cannot).
    public init(compress: @escaping @Sendable ([UInt8]) -> [UInt8]?) {
        self.compress = compress
    }

    public var encodes: Int { state.withLock { $0.encodes } }
    public var compressions: Int { state.withLock { $0.compressions } }

    /// The key of what a feed has published: its seconds, and whether it has ended (the map is drawn once more then).
    public static func key(_ feed: DashboardFeed) -> Int { feed.published * 2 + (feed.end == nil ? 0 : 1) }

    /// The bytes already made for `key` (gzipped, if `gzip` and gzip can be made), or nil: none made for it yet.
    public func cached(for key: Int, gzip: Bool) -> (body: [UInt8], gzip: Bool)? {
        state.withLock { s in
            guard s.made?.key == key else { return nil }
            return served(&s, gzip: gzip)
        }
    }

    /// Keeps `plain` as `key`'s bytes (unless another reader made them first: theirs are served) and serves them.
    public func store(_ plain: [UInt8], for key: Int, gzip: Bool) -> (body: [UInt8], gzip: Bool) {
        state.withLock { s in
            if s.made?.key != key {
                s.encodes += 1
                s.made = Made(key: key, plain: plain, gzip: nil)
            }
            return served(&s, gzip: gzip) ?? (plain, false)
        }
    }

    private func served(_ s: inout State, gzip: Bool) -> (body: [UInt8], gzip: Bool)? {
        guard var current = s.made else { return nil }
        guard gzip else { return (current.plain, false) }
        if current.gzip == nil, let packed = compress(current.plain) {
            s.compressions += 1
            current.gzip = packed
            s.made = current
        }
        return current.gzip.map { ($0, true) } ?? (current.plain, false)
    }
}
