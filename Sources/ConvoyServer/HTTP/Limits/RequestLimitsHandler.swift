import HummingbirdWebSocket
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// Holds each HTTP connection to `ConnectionLimits`: the idle, head and body
/// clocks (`StateMachine`), 400 for what cannot be parsed and 431 for too big a
/// head (NIO's decoder reports both), and the end of a connection whose body was
/// refused with a 413. It sits after the HTTP decoder, where it sees parsed parts;
/// `ByteArrivalHandler`, first in the pipeline, tells it when a request's first byte comes.
///
/// A WebSocket upgrade hands the connection over: the guard leaves the pipeline
/// and puts `MaskedFrameGuard` behind the frame decoder.
final class RequestLimitsHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What a request cut off by a clock gets in place of the rest of its body.
    struct RequestTimedOut: Error {}

    private var state: StateMachine
    private var timer: (deadline: NIODeadline, task: Scheduled<Void>)?
    private var context: ChannelHandlerContext?
    /// Answered and closing: what the client still sends is read and dropped until it stops or `linger` passes.
    private var lingering: Scheduled<Void>?

    /// How long a refused client may go on sending before the connection is closed under it.
    static let linger = TimeAmount.seconds(2)

    init(limits: ConnectionLimits) {
        state = StateMachine(limits: limits, now: .now())
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        rearm()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    /// From `ByteArrivalHandler`, before the decoder sees the bytes.
    func bytesArrived() {
        state.bytesArrived(now: .now())
        rearm()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard lingering == nil else { return }
        switch unwrapInboundIn(data) {
        case .head: state.headRead(now: .now())
        case .body: break
        case .end: state.endRead(now: .now())
        }
        rearm()
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !state.closed else {
            // Answered already (408, 400, 431): the application's late response goes nowhere.
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(var head):
            if state.responseHeadWritten(status: head.status, closing: head.headers[canonicalForm: "connection"].contains("close")) {
                head.headers.replaceOrAdd(name: "connection", value: "close")
            }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            context.write(data, promise: promise)
            act(state.responseEndWritten(now: .now()), context: context)
            rearm()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard lingering == nil else { return }
        if let parse = error as? HTTPParserError {
            act(state.badRequest(headerOverflow: parse == .headerOverflow), context: context)
        } else if error is ByteToMessageDecoderError {
            // More bytes after a parse error.
            act(state.badRequest(headerOverflow: false), context: context)
        }
        context.fireErrorCaught(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .upgradeComplete = event as? HTTPServerUpgradeEvents {
            handOver(context: context)
        } else if event is ChannelShouldQuiesceEvent {
            // Hummingbird's own handler, there after a first request only, does the same.
            act(state.quiesce(), context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func act(_ action: StateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            return
        case .close:
            context.flush()
        case .answer(let status):
            let head = HTTPResponseHead(version: .http1_1, status: status,
                                        headers: ["connection": "close", "content-length": "0"])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        linger(context)
    }

    /// Closes after an answer the client may still be sending a body to (a 413 mid-upload, a 408): closing at once
    /// with its bytes unread would reset the connection, and the client might read the reset before the answer
    /// (libcurl: "Send failure: Connection reset by peer"). So this side is shut first (the answer, then FIN),
    /// what still comes is read and dropped, and the connection is closed when the client closes or after `linger`.
    private func linger(_ context: ChannelHandlerContext) {
        guard lingering == nil else { return }
        timer?.task.cancel()
        timer = nil
        let loop = context.eventLoop.assumeIsolated()
        lingering = loop.scheduleTask(in: Self.linger) { context.close(promise: nil) }
        let closing = context.eventLoop.makePromise(of: Void.self)
        closing.futureResult.assumeIsolated().whenFailure { _ in context.close(promise: nil) }
        context.close(mode: .output, promise: closing)
    }

    private func rearm() {
        guard let context else { return }
        let deadline = state.deadline?.time
        guard deadline != timer?.deadline else { return }
        timer?.task.cancel()
        timer = nil
        guard let deadline else { return }
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in fire() }
        timer = (deadline, task)
    }

    private func fire() {
        timer = nil
        guard lingering == nil else { return }
        guard let context, let deadline = state.deadline else { return }
        guard NIODeadline.now() >= deadline.time else { return rearm() }
        let action = state.timedOut()
        // A handler waiting for this request's body hears that it will not come
        // (the stream just ending would look like a complete, shorter body).
        if case .idle = deadline {} else { context.fireErrorCaught(RequestTimedOut()) }
        act(action, context: context)
    }

    private func stop() {
        timer?.task.cancel()
        timer = nil
        lingering?.cancel()
        lingering = nil
        state.finish()
        context = nil
    }

    /// After a WebSocket upgrade the HTTP clocks stop; the WebSocket's own ping
    /// and close timeouts take over, and client frames must be masked (RFC 6455 §5.1).
    private func handOver(context: ChannelHandlerContext) {
        stop()
        let pipeline = context.pipeline.syncOperations
        if let bytes = try? pipeline.context(handlerType: ByteArrivalHandler.self) {
            pipeline.removeHandler(context: bytes, promise: nil)
        }
        if let decoder = try? pipeline.context(handlerType: ByteToMessageHandler<WebSocketFrameDecoder>.self) {
            try? pipeline.addHandler(MaskedFrameGuard(), position: .after(decoder.handler))
        }
        pipeline.removeHandler(context: context, promise: nil)
    }
}

@available(*, unavailable)
extension RequestLimitsHandler: Sendable {}

/// First in an HTTP connection's pipeline: tells `RequestLimitsHandler` that
/// bytes came, so the head clock of a request starts at its first byte.
final class ByteArrivalHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var limits: RequestLimitsHandler?

    init(_ limits: RequestLimitsHandler) {
        self.limits = limits
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        limits?.bytesArrived()
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        limits = nil
    }

    /// A connection that ends before its first request was read (a guard's close,
    /// a port scan) leaves the upgrade handler's promise to fail as "removed",
    /// which Hummingbird logs as an error, one line per connection. Told the input
    /// is closed, the handler fails it as `inputClosed`, which Hummingbird files at trace.
    func channelInactive(context: ChannelHandlerContext) {
        typealias Upgrade = NIOTypedHTTPServerUpgradeHandler<HTTP1WebSocketUpgradeChannel.UpgradeResult>
        if (try? context.pipeline.syncOperations.context(handlerType: Upgrade.self)) != nil {
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
        context.fireChannelInactive()
    }
}

@available(*, unavailable)
extension ByteArrivalHandler: Sendable {}
