import Hummingbird
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import Synchronization

/// Where one Realtime connection's frames go: written straight to its
/// channel, from whichever thread sends (the writer's queue for a change,
/// the session for a reply), in the order they were sent. There is no task
/// per connection and no queue in between: a change reaches the socket with
/// one hop to its event loop.
///
/// A client that stops reading is closed (1008) once `maxUnwritable` frames
/// were sent while its channel could take no more (NIO's high-water mark),
/// as the queue of the old writer task closed it.
///
/// It also keeps when the client last sent a message, for the idle close
/// (`RealtimeHub.closeIdle`): Supabase's Realtime (Phoenix on Cowboy) closes
/// a socket that sent nothing for 60 s and never pings a client itself.
final class RealtimeOutlet: Sendable {
    let channel: any Channel
    let maxUnwritable: Int
    private let unwritable = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)
    /// The monotonic second of the client's last message (a `Double`'s bits).
    private let heard: Atomic<UInt64>

    /// Frames sent to a connection while its send buffer is full before it counts as not reading and is closed.
    static let maxUnwritable = 8192

    /// `heardAt`: the monotonic second the connection opened (its idle clock starts there).
    init(channel: any Channel, maxUnwritable: Int = RealtimeOutlet.maxUnwritable, heardAt: Double = 0) {
        self.channel = channel
        self.maxUnwritable = maxUnwritable
        heard = Atomic(heardAt.bitPattern)
    }

    /// Whether the outlet closed (the session ended, or it shut the connection).
    var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// The client sent a message at monotonic second `now`.
    func heard(at now: Double) { heard.store(now.bitPattern, ordering: .relaxed) }

    /// The monotonic second of the client's last message (or of the upgrade).
    var lastHeard: Double { Double(bitPattern: heard.load(ordering: .relaxed)) }

    /// Closes an idle connection as Cowboy's `idle_timeout` does: close frame 1000, then the socket.
    func closeIdle() { shut(.normalClosure, reason: "") }

    /// Queues a text frame; false once the outlet is closed (or closes now).
    @discardableResult
    func send(_ text: String) -> Bool {
        guard !closed.load(ordering: .relaxed) else { return false }
        if channel.isWritable {
            unwritable.store(0, ordering: .relaxed)
        } else if unwritable.wrappingAdd(1, ordering: .relaxed).newValue > maxUnwritable {
            shut(.policyViolation, reason: "too many unread messages")
            return false
        }
        let channel = channel
        // Always through the loop's queue, even on the loop: frames keep the order of the calls.
        channel.eventLoop.execute {
            let frame = WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text))
            channel.writeAndFlush(frame, promise: nil)
        }
        return true
    }

    /// No more frames go out (the session ended: Hummingbird sends the close reply).
    func finish() { closed.store(true, ordering: .relaxed) }

    /// Sends a close frame with `code` and closes the connection.
    private func shut(_ code: WebSocketErrorCode, reason: String) {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        let channel = channel
        channel.eventLoop.execute {
            var data = channel.allocator.buffer(capacity: 2 + reason.utf8.count)
            data.write(webSocketErrorCode: code)
            data.writeString(reason)
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)).whenComplete { _ in
                channel.close(promise: nil)
            }
        }
    }
}

/// The Realtime route's request context: Hummingbird's, with the connection's
/// channel, which the outlet writes to.
struct RealtimeRequestContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}
