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
    /// Answered and closing: what the client still sends is read and dropped (`drained` bytes so far) until it
    /// stops, `linger` passes or `lingerBytes` came.
    private var draining = false
    private var lingering: Scheduled<Void>?
    private var drained = 0

    /// How long, and how much, a refused client may go on sending before the connection is closed under it
    /// (nginx's lingering close: 30 s; a client writing its whole body before it reads needs the body's time).
    static let linger = TimeAmount.seconds(5)
    static let lingerBytes = 64 << 20

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
    func bytesArrived(_ count: Int) {
        guard !draining else {
            drained += count
            if drained > Self.lingerBytes, lingering != nil { context?.close(promise: nil) }
            return
        }
        state.bytesArrived(now: .now())
        rearm()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !draining, !state.refusing else { return }
        switch unwrapInboundIn(data) {
        case .head(let head): state.headRead(now: .now(), closing: head.headers[canonicalForm: "connection"].contains("close"))
        case .body: break
        case .end: state.endRead(now: .now())
        }
        rearm()
        context.fireChannelRead(data)
    }

    /// Draining, this side asks for the next read itself: the application, which asked for reads, has stopped.
    func channelReadComplete(context: ChannelHandlerContext) {
        if draining, lingering != nil { context.read() }
        context.fireChannelReadComplete()
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
            let action = state.responseEndWritten(now: .now())
            guard action != .none else {
                context.write(data, promise: promise)
                return rearm()
            }
            // Closing after this response: the output is shut only once it (and the responses before it) are out.
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            context.write(data, promise: written)
            act(action, context: context, after: written.futureResult)
            rearm()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !draining, !state.refusing else { return }
        if let parse = error as? HTTPParserError {
            act(state.badRequest(headerOverflow: parse == .headerOverflow), context: context)
        } else if error is ByteToMessageDecoderError {
            // More bytes after a parse error.
            act(state.badRequest(headerOverflow: false), context: context)
        }
        // Behind requests still owed an answer, the application does not hear of it: it answers them,
        // and this handler answers the bad one after them, then closes.
        guard !state.refusing else { return }
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

    /// Does what the state machine says; `after`: the last response's end, which must be out before the output shuts.
    private func act(_ action: StateMachine.Action, context: ChannelHandlerContext, after: EventLoopFuture<Void>? = nil) {
        let written: EventLoopFuture<Void>
        switch action {
        case .none:
            return
        case .close:
            context.flush()
            written = after ?? context.eventLoop.makeSucceededVoidFuture()
        case .answer(let status):
            let head = HTTPResponseHead(version: .http1_1, status: status,
                                        headers: ["connection": "close", "content-length": "0"])
            let end = context.eventLoop.makePromise(of: Void.self)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: end)
            written = end.futureResult
        }
        draining = true
        timer?.task.cancel()
        timer = nil
        // Shutting the output with writes pending would drop them (NIO fails what is not yet out).
        written.assumeIsolated().whenComplete { [self] _ in linger(context) }
    }

    /// Closes after an answer the client may still be sending a body to (a 413 mid-upload, a 408, a 401 before
    /// the upload was read): closing at once with its bytes unread would reset the connection, and the client
    /// would read the reset, not the answer (libcurl: "Send failure: Connection reset by peer"; a client that
    /// writes its whole body before reading, as Python's urllib: "Broken pipe"). So this side is shut first (the
    /// answer, then FIN; RFC 9112 §9.6), what still comes is read and dropped, and the connection is closed when
    /// the client closes, after `linger`, or past `lingerBytes`.
    private func linger(_ context: ChannelHandlerContext) {
        guard lingering == nil, self.context != nil else { return }
        let loop = context.eventLoop.assumeIsolated()
        lingering = loop.scheduleTask(in: Self.linger) { context.close(promise: nil) }
        context.read()
        let closing = context.eventLoop.makePromise(of: Void.self)
        // Shut already (the application's own half-close after a `Connection: close` request): drain all the same.
        closing.futureResult.assumeIsolated().whenFailure { error in
            if (error as? ChannelError) != .outputClosed { context.close(promise: nil) }
        }
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
        guard !draining else { return }
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
        limits?.bytesArrived(unwrapInboundIn(data).readableBytes)
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
