import Foundation
import Synchronization

/// Wall-clock time as the server sees it. Injected so that token expiry,
/// retention and invite lifetimes are tested without sleeping.
public protocol ServerClock: Sendable {
    func now() -> Date
}

public struct SystemServerClock: ServerClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that moves only when told to.
public final class ManualServerClock: ServerClock {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_600_000)) {
        current = Mutex(start)
    }

    public func now() -> Date { current.withLock { $0 } }

    public func advance(by seconds: Double) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
