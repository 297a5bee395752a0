import Foundation
import NIOCore
import Synchronization

/// A device's FCM connection as Convoy's reference backend offers it (`GET /fcm/connect?token=…`, a websocket standing
/// for FCM's own persistent socket; docs/server.md, "FCM"): each message sent to the device's registration token is one
/// text frame, `{"message": {"data": {…}, "notification": {…}}}`. Not reopened here: `isOpen` says when it has closed.
public final class FCMConnection: Sendable {
    private let socket: RealtimeSocket
    private let open = Atomic<Bool>(true)

    private init(socket: RealtimeSocket) { self.socket = socket }

    /// A registration token as FCM issues one: an instance id, a colon, and 140 characters of URL-safe base64.
    public static func newToken() -> String {
        let symbols = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var g = SystemRandomNumberGenerator()
        return String((0..<22).map { _ in symbols.randomElement(using: &g)! }) + ":APA91b" + String((0..<134).map { _ in symbols.randomElement(using: &g)! })
    }

    /// Connects as the device with `token`; `received` is called on the connection's event loop with each message's text.
    public static func open(url: String, token: String, proxy: TunnelProxy? = nil, timeout: Double = 30,
                            received: @escaping @Sendable (String) -> Void) async throws(SupabaseError) -> FCMConnection {
        let query = token.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? token
        let socket: RealtimeSocket
        do {
            socket = try await RealtimeSocket.connect(url: RealtimeSocket.webSocketURL(url, path: "/fcm/connect?token=" + query), proxy: proxy,
                                                      maxFrameSize: 1 << 16, timeout: timeout, onText: received)
        } catch {
            throw SupabaseError(kind: .wire(.transport), message: "FCM: \(error)")
        }
        let connection = FCMConnection(socket: socket)
        socket.closed.whenComplete { _ in connection.open.store(false, ordering: .relaxed) }
        return connection
    }

    public var isOpen: Bool { open.load(ordering: .relaxed) }

    public func close() {
        open.store(false, ordering: .relaxed)
        socket.close()
    }
}
