import Foundation

extension RealtimeClient {
    /// How long a connection may take to open (TCP, TLS and the websocket upgrade) by default, seconds.
    public static let openTimeout = 20.0

    struct OpenTimeout: Error, CustomStringConvertible {
        var description: String { "the websocket did not open in time" }
    }

    struct HeartbeatTimeout: Error, CustomStringConvertible {
        var description: String { "heartbeat timeout" }
    }
}
