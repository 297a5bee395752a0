import Foundation
import Synchronization

/// `convoy run --dashboard --dashboard-control`: the page may stop the run, as SIGINT does (the phones stop, the run
/// drains, the results are written and marked incomplete). The page has no login, so a stop needs the token printed on
/// standard error at start (`Authorization: Bearer TOKEN` on `POST /api/stop`); it is written nowhere else.
final class DashboardControl: Sendable {
    let token: String
    private let state = Mutex<(stop: (@Sendable () -> Void)?, requested: Bool)>((nil, false))

    init(token: String = DashboardControl.newToken()) {
        self.token = token
    }

    /// 128 random bits, as 32 hex digits.
    static func newToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(rng.next() as UInt64, radix: 16) }.map { String(repeating: "0", count: 16 - $0.count) + $0 }.joined()
    }

    /// Whether an Authorization header carries the token (`Bearer TOKEN`), compared in time independent of where it differs.
    func authorizes(_ header: String?) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.dropFirst(7).utf8), wanted = Array(token.utf8)
        guard given.count == wanted.count else { return false }
        return zip(given, wanted).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// Asks the run to stop; true the first time (later ones change nothing).
    func requestStop() -> Bool {
        let (first, stop) = state.withLock { s -> (Bool, (@Sendable () -> Void)?) in
            defer { s.requested = true }
            return (!s.requested, s.requested ? nil : s.stop)
        }
        stop?()
        return first
    }

    /// What stopping does, once the run has started; at once if a stop was asked for before.
    func onStop(_ stop: @escaping @Sendable () -> Void) {
        let already = state.withLock { s -> Bool in
            s.stop = stop
            return s.requested
        }
        if already { stop() }
    }
}
